"""The evidence path: manifest -> raw trials -> paired experiment -> comparison through a
qualified method -> receipt -> resolve / replay -> ledger (DESIGN.md "Evidence path").

Modules: ``manifest`` (pinned plan), ``population`` (the registered case list),
``trials`` / ``columnar`` (strict ingest), ``adapters.inspect`` (Inspect AI logs, read from
their format) and ``adapters.lmeval`` (lm-evaluation-harness samples), ``provenance``
(plan before data: chronology, per-arm identities, pairing mistakes), ``experiment``
(pairing), ``comparison``, ``icc``, ``reliability`` (pass^k / pass@k) and ``slices``
(protected slices), ``coverage`` (the pinned qualification record), ``receipt`` (the
rules), ``packet`` (run), ``replay``, ``resolve``, ``ledger``, ``signatures``, ``report``
(verdict, Markdown, JUnit), ``errors``, ``synthetic`` / ``demo`` / ``bench`` /
``bench_inspect``.  Imports ``simlab`` and ``methods`` only."""
