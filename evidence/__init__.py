"""The evidence path: manifest -> raw trials -> paired experiment -> comparison through a
qualified method -> receipt -> resolve / replay -> ledger (DESIGN.md "Evidence path").

Modules: ``manifest`` (pinned plan), ``trials`` / ``columnar`` (strict ingest),
``adapters.inspect`` (Inspect AI logs), ``experiment`` (pairing), ``comparison`` and ``icc``
(the registered method's single analysis, ICC bound), ``coverage`` (the pinned
qualification record), ``receipt`` (the rules), ``packet`` (run), ``replay``, ``resolve``,
``ledger``, ``signatures``, ``synthetic`` / ``demo`` / ``bench``.  Imports ``simlab`` and
``methods`` only."""
