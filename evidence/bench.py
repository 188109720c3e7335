"""``simlab bench evidence``: the evidence path on a large synthetic experiment, against a
plain line-by-line ``json`` + Python-dict reference measured in the same run.

The experiment (default 1,000,000 trial records per arm: 20,000 customers x 10 cases x 5
repetitions) is written as JSONL, then each stage is timed in a fresh process so its peak
resident memory is the path's own: ingestion (strict validation), pairing, comparison
(registered method + ICC bound), receipt (qualification check, raw-artifact hash,
receipt) and replay (everything again from the raw file).  The reference does ingestion
and pairing with ``json.loads`` and dicts (checking the same fields) and shares the
comparison and receipt code, so the ratio isolates what the columnar reader buys.

Columnar reader: pyarrow -- its JSON reader takes an explicit schema and fails on an
unexpected field (``unexpected_field_behavior="error"``), so strictness costs nothing on
the fast path, and it parses in parallel blocks while a second thread hashes the file."""
from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import resource
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .synthetic import demo_manifest, draw_categories

NOW = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.timezone.utc)


def write_experiment(path: Path, manifest, *, clusters: int, cases: int, seed: int = 11) -> None:
    """JSONL for ``clusters x cases x manifest.repetitions`` pairs, written cluster block by block."""
    reps = manifest.repetitions
    cats = draw_categories(clusters=clusters, pairs_per_cluster=cases * reps, baseline=0.9, discordance=0.01, seed=seed)
    tail = f',"failed_checks":[],"latency_ms":120.5,"cost":0.002,"cost_provenance":"synthetic","manifest_sha256":"{manifest.sha256}"}}'
    with open(path, "w") as f:
        for k in range(clusters):
            lines = []
            for j in range(cases):
                for t in range(reps):
                    c = cats[k, j * reps + t]
                    head = f'{{"case_id":"c{k}-{j}","trial_index":{t},"cluster_id":"u{k}"'
                    lines.append(f'{head},"arm":"baseline","passed":{"true" if c < 2 else "false"}{tail}')
                    lines.append(f'{head},"arm":"candidate","passed":{"true" if c in (0, 2) else "false"}{tail}')
            f.write("\n".join(lines) + "\n")


def reference_pairs(path: Path, manifest):
    """Line-by-line json + dicts: validate, pair by (case, trial), per-cluster tables."""
    from .experiment import PairedExperiment

    arms = {"baseline": {}, "candidate": {}}
    expected = manifest.sha256
    with open(path) as f:
        for number, line in enumerate(f, 1):
            r = __import__("json").loads(line)
            if not (isinstance(r.get("case_id"), str) and type(r.get("trial_index")) is int
                    and isinstance(r.get("cluster_id"), str) and r.get("arm") in arms
                    and type(r.get("passed")) is bool and isinstance(r.get("failed_checks"), list)
                    and r.get("cost_provenance") in ("absent", "synthetic", "measured")
                    and r.get("manifest_sha256") == expected):
                raise ValueError(f"line {number}: bad row")
            key = (r["case_id"], r["trial_index"])
            if key in arms[r["arm"]]:
                raise ValueError(f"line {number}: duplicated {key}")
            # what pairing needs, not the whole parsed record: holding every record's dict (about
            # 1 KB each) took 2.4 GB at 1,000,000 trials per arm and failed under a 4 GB address space
            arms[r["arm"]][key] = (r["cluster_id"], r["passed"], bool(r["failed_checks"]))
    base, cand = arms["baseline"], arms["candidate"]
    if base.keys() != cand.keys():
        raise ValueError("missing pairs")
    tables: dict[str, list[int]] = {}
    per_case: dict[str, list] = {}  # case -> [cluster, cells, baseline passes, candidate passes, trials]
    failed = 0
    for key, (b_cluster, b_passed, _) in base.items():
        c_cluster, c_passed, c_failed = cand[key]
        if b_cluster != c_cluster:
            raise ValueError(f"cluster mismatch {key}")
        failed += c_failed
        cell = (0 if b_passed else 2) + (0 if c_passed else 1)
        tables.setdefault(b_cluster, [0, 0, 0, 0])[cell] += 1
        entry = per_case.setdefault(key[0], [b_cluster, [0, 0, 0, 0], 0, 0, 0])
        entry[1][cell] += 1
        entry[2] += b_passed
        entry[3] += c_passed
        entry[4] += 1
    row = {name: i for i, name in enumerate(tables)}
    cases = list(per_case.values())
    return PairedExperiment(tables=np.array(list(tables.values()), dtype=np.int64),
                            cluster_names=np.array(list(tables), dtype=object), pairs=len(base),
                            cases=len(per_case), candidate_failed_trials=failed, failed_examples=(),
                            provenance_counts={"absent": 0, "synthetic": 2 * len(base), "measured": 0},
                            case_names=np.array(list(per_case), dtype=object),
                            case_cluster=np.array([row[e[0]] for e in cases], dtype=np.int64),
                            case_cells=np.array([e[1] for e in cases], dtype=np.int64),
                            case_passes=np.array([[e[2], e[3]] for e in cases], dtype=np.int64),
                            case_trials=np.array([e[4] for e in cases], dtype=np.int64))


def _receipt(manifest, experiment, comparison, digest: str):
    from .qualification_check import check_qualification
    from .receipt import build_receipt

    q = check_qualification(manifest, experiment, now=NOW)
    return build_receipt(manifest=manifest, experiment=experiment, comparison=comparison, qualification=q,
                         raw_artifacts={"trials": digest},
                         issued_at=NOW)


class _Clock:
    """Wall and CPU seconds (all threads of this process) per stage."""

    def __init__(self):
        self.wall, self.cpu = {}, {}
        self._t = (time.perf_counter(), time.process_time())

    def lap(self, name: str) -> None:
        w, c = time.perf_counter(), time.process_time()
        self.wall[name], self.cpu[name] = w - self._t[0], c - self._t[1]
        self._t = (time.perf_counter(), time.process_time())


def _stages(kind: str, path: str, manifest_json: str, packet_dir: str, queue) -> None:
    """One path in a fresh process; reports stage times and peak RSS, or what failed (as a
    message on the queue, not a traceback on stderr: the parent words it)."""
    try:
        _run_stages(kind, path, manifest_json, packet_dir, queue)
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the parent, in one line
        memory = isinstance(exc, MemoryError)
        text = " ".join(str(exc).split()) or type(exc).__name__
        queue.put({"error": f"{type(exc).__name__}: {text}" if not memory else "out of memory",
                   "out_of_memory": memory,
                   "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024})


def _run_stages(kind: str, path: str, manifest_json: str, packet_dir: str, queue) -> None:
    from .comparison import compare
    from .experiment import pair_trials
    from simlab.hashing import file_hash
    from .manifest import Manifest
    from .trials import read_trial_file, read_trials

    manifest = Manifest.parse(manifest_json)
    compare(pair_trials(read_trials(_warm(path, manifest)), manifest), manifest)  # compile kernels, load records
    clock = _Clock()
    if kind == "simlab":
        cols, digest = read_trial_file(path)
        clock.lap("ingest")
        experiment = pair_trials(cols, manifest)
        del cols
        clock.lap("pairing")
    else:
        experiment = reference_pairs(Path(path), manifest)
        digest = file_hash(path)
        clock.lap("ingest+pairing")
    comparison = compare(experiment, manifest)
    clock.lap("comparison")
    receipt = _receipt(manifest, experiment, comparison, digest)
    clock.lap("receipt")
    if kind == "simlab":
        from .packet import run_experiment, trial_artifacts
        from .replay import replay_packet
        packet = run_experiment(manifest=manifest, artifacts=trial_artifacts(path), out=Path(packet_dir) / "p.json",
                                now=NOW, overwrite=True)
        clock.lap("run (written packet, not in total)")
        out = replay_packet(packet, base=packet_dir)
        assert out["ok"], out["reasons"]
    else:  # the reference's replay: everything again from the raw file
        e2 = reference_pairs(Path(path), manifest)
        _receipt(manifest, e2, compare(e2, manifest), file_hash(path))
    clock.lap("replay")
    counted = [k for k in clock.wall if "not in total" not in k]
    queue.put({"stages": clock.wall, "cpu_stages": clock.cpu, "total": sum(clock.wall[k] for k in counted),
               "cpu_total": sum(clock.cpu[k] for k in counted), "action": receipt["action"],
               "comparison_sha256": receipt["components"]["comparison"],
               "pairs": experiment.pairs, "clusters": experiment.clusters,
               "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024})


def _warm(path: str, manifest) -> str:
    """A small file in the same folder to compile and load everything before timing."""
    small = Path(path).with_name("warm.jsonl")
    if not small.exists():
        write_experiment(small, manifest, clusters=20, cases=2)
    return str(small)


class BenchProcessFailed(ChildProcessError):
    """A benchmark stage process failed: ``kind`` (``simlab`` or ``reference``), ``reason``
    (one line), ``out_of_memory`` and its ``peak_rss_bytes`` when known."""

    def __init__(self, kind: str, reason: str, out_of_memory: bool = False, peak_rss_bytes: int | None = None):
        super().__init__(f"the {kind} benchmark process failed: {reason}")
        self.kind, self.reason, self.out_of_memory, self.peak_rss_bytes = kind, reason, out_of_memory, peak_rss_bytes


def _measure(kind: str, path: Path, manifest, packet_dir: Path) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_stages, args=(kind, str(path), manifest.model_dump_json(), str(packet_dir), queue))
    proc.start()
    from queue import Empty
    try:
        while True:  # a child that dies reports nothing: notice it instead of waiting forever
            try:
                result = queue.get(timeout=2)
                break
            except Empty:
                if not proc.is_alive():
                    code = proc.exitcode
                    reason = (f"stopped by signal {-code} (the system may have run out of memory)" if code and code < 0
                              else f"exit code {code}")
                    raise BenchProcessFailed(kind, reason, out_of_memory=code == -9) from None
        proc.join()
    finally:
        if proc.is_alive():  # interrupted, or a failure reported: the child does not outlive the benchmark
            proc.terminate()
            proc.join(5)
    if "error" in result:
        raise BenchProcessFailed(kind, result["error"], result["out_of_memory"], result.get("peak_rss_bytes"))
    return result


# ---------------------------------------------------------------- the estimate (before any stage runs)

# What a stage process holds beyond the pairs: the interpreter with numpy, numba, pyarrow and the
# comparison kernels loaded, then about 1 KB a pair (simlab: the columns, the pairing's arrays;
# the reference: its per-record tuples and dicts).  Measured on a 2-core x86-64 Linux machine at
# 1,000,000 trials per arm: peak RSS 1.28 GB simlab, 1.04 GB reference (the reference held every
# parsed record before: 2.4 GB, over a 4 GB address space with numba loaded).
PROCESS_BASE_BYTES = 300 << 20
SIMLAB_BYTES_PER_PAIR = 1000
REFERENCE_BYTES_PER_PAIR = 800
# A stage process's start, imports and warm-up on the small file (same machine: 6-9 s each).
PROCESS_START_SECONDS = 6.0
PILOT_PAIRS = 20_000


def _pilot(folder: Path, manifest, clusters: int, cases: int) -> dict:
    """Seconds a pair of writing, of the simlab path's reading and pairing, and of the
    reference's (json + dicts), timed in this process on a small file of the same shape."""
    from .experiment import pair_trials
    from .trials import read_trial_file

    reps = manifest.repetitions
    k = max(1, min(clusters, PILOT_PAIRS // (cases * reps)))
    pairs = k * cases * reps
    path = folder / "pilot.jsonl"
    t0 = time.perf_counter()
    write_experiment(path, manifest, clusters=k, cases=cases)
    t1 = time.perf_counter()
    cols, _ = read_trial_file(str(path))
    pair_trials(cols, manifest)
    t2 = time.perf_counter()
    reference_pairs(path, manifest)
    t3 = time.perf_counter()
    path.unlink()
    return {"pairs": pairs, "write": (t1 - t0) / pairs, "simlab": (t2 - t1) / pairs, "reference": (t3 - t2) / pairs}


def estimate(trials_per_arm: int, clusters: int, reference_trials: int | None, pilot: dict) -> dict:
    """Wall seconds and each stage process's peak memory of :func:`bench_evidence`, from the
    pilot's rates: writing the file(s); two stage processes (start-up and warm-up each); the
    simlab path reads and pairs the file three times (timed run, written packet, replay), the
    reference twice (timed run, replay), each with the comparison and receipt."""
    ref_pairs = reference_trials or trials_per_arm
    write = pilot["write"] * (trials_per_arm + (ref_pairs if ref_pairs != trials_per_arm else 0))
    seconds = (write + 2 * PROCESS_START_SECONDS + 3 * pilot["simlab"] * trials_per_arm
               + 2 * pilot["reference"] * ref_pairs)
    return {"seconds": seconds, "simlab_bytes": PROCESS_BASE_BYTES + SIMLAB_BYTES_PER_PAIR * trials_per_arm,
            "reference_bytes": PROCESS_BASE_BYTES + REFERENCE_BYTES_PER_PAIR * ref_pairs,
            # about 265 bytes a pair of JSONL lines (529 MB at 1,000,000 trials per arm)
            "file_bytes": int(265 * (trials_per_arm + (ref_pairs if ref_pairs != trials_per_arm else 0))),
            "pilot_pairs": pilot["pairs"]}


def bench_evidence(trials_per_arm: int = 1_000_000, clusters: int = 20_000, reference_trials: int | None = None,
                   folder: str | Path | None = None, check: Callable[[dict], object] | None = None,
                   progress: Callable[[str], object] | None = None) -> dict:
    """``check(estimate)`` is given :func:`estimate`'s figures after a short pilot and before
    the experiment is written (it may raise to refuse); ``progress(label)`` is told each part
    as it starts.  A stage process that fails raises :class:`BenchProcessFailed`."""
    reps = 5
    if trials_per_arm % (clusters * reps):
        raise ValueError(f"--trials {trials_per_arm} must be a multiple of clusters x 5 repetitions "
                         f"({clusters * reps})")
    cases = trials_per_arm // (clusters * reps)
    say = progress or (lambda message: None)
    manifest = demo_manifest(experiment_id="bench", repetitions=reps, minimum_clusters=30)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        tmp = Path(tmp)
        if check is not None:
            check(estimate(trials_per_arm, clusters, reference_trials, _pilot(tmp, manifest, clusters, cases)))
        path = tmp / "trials.jsonl"
        say(f"writing {trials_per_arm:,} trials per arm as JSONL")
        t0 = time.perf_counter()
        write_experiment(path, manifest, clusters=clusters, cases=cases)
        build = time.perf_counter() - t0
        say(f"timing the simlab path in a fresh process ({trials_per_arm:,} pairs)")
        ours = _measure("simlab", path, manifest, tmp)
        ref_path = path
        if reference_trials and reference_trials != trials_per_arm:
            ref_path = tmp / "reference.jsonl"
            ref_clusters = max(1, reference_trials // (cases * reps))
            say(f"writing the reference's {ref_clusters * cases * reps:,} trials per arm")
            write_experiment(ref_path, manifest, clusters=ref_clusters, cases=cases)
        say(f"timing the json + dict reference in a fresh process ({reference_trials or trials_per_arm:,} pairs)")
        ref = _measure("reference", ref_path, manifest, tmp)
        size = path.stat().st_size
    scale = ours["pairs"] / ref["pairs"]
    return {"trials_per_arm": trials_per_arm, "clusters": clusters, "cases": clusters * cases, "repetitions": reps,
            "file_bytes": size, "build_seconds": build, "simlab": ours, "reference": ref,
            "reference_scaled_total": ref["total"] * scale, "speedup": ref["total"] * scale / ours["total"],
            "cpu_speedup": ref["cpu_total"] * scale / ours["cpu_total"],
            "reader": "pyarrow (explicit schema, unknown fields rejected, parallel blocks; sha256 in a second thread)"}


def render_bench(p: dict) -> None:
    print(f"evidence path: {p['trials_per_arm']:,} trials per arm ({p['cases']:,} cases x {p['repetitions']} "
          f"repetitions, {p['clusters']:,} clusters; {p['file_bytes'] / 1e6:.0f} MB JSONL, built in "
          f"{p['build_seconds']:.1f} s)")
    for name in ("simlab", "reference"):
        r = p[name]
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in r["stages"].items())
        print(f"  {name:<9} total {r['total']:.2f} s wall, {r['cpu_total']:.2f} s CPU; peak RSS "
              f"{r['peak_rss_bytes'] / 2**30:.2f} GiB: {stages}")
    print(f"  speedup vs the json + dict reference: {p['speedup']:.1f}x wall, {p['cpu_speedup']:.1f}x CPU; "
          f"reader: {p['reader']}")
