"""``simlab study run|show|plot``: operating-characteristics studies (spec -> dataset)."""
from __future__ import annotations

import argparse
import math

from simlab.cli._args import (add_device_option, add_json, add_max_memory, add_max_seconds, check_and_say_time,
                             check_device, check_memory, check_time, finite_float, n_jobs, nonempty_path,
                             on_selected_device, positive_int, first_use_compiles)
from simlab.cli._backend import add_backend_arguments
from simlab.cli._output import UsageError, emit, log_to_stderr, print_table

DEFAULT_WORK_DIR = "simlab-out/.runs"  # scratch: results/ holds only what ships


def _existing_ancestor(path):
    """``path`` or its nearest ancestor that exists: where the missing folders would be made
    (a folder that cannot be searched hides what is under it: it is the answer)."""
    while True:
        try:
            if path.exists():
                return path
        except PermissionError:
            return path.parent
        if path.parent == path:   # a working folder that is gone
            return path
        path = path.parent


def _probe_file(folder, flag: str, p) -> None:
    """Create and remove a uniquely named file in ``folder``: os.access says yes to root
    everywhere, /proc included, and the refusal came after the work as the errno of a lock or
    temporary file.  Refused with the flag named."""
    import os
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=".simlab-probe-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"{flag} {p}: {folder} cannot be written here ({exc.strerror or exc})", flag) from None
    os.close(fd)
    try:
        os.unlink(name)
    except OSError:
        pass


def check_writable(path, flag: str) -> None:
    """Refuse an output path that cannot be written, before any work (its first existing
    ancestor must be a folder in which a file can be made, tried with a probe file; an
    existing target must be a file)."""
    import os
    from pathlib import Path

    p = Path(path)
    if p.exists() and p.is_dir():
        raise UsageError(f"{flag} {p} is a directory; give a file path", flag)
    parent = _existing_ancestor(p.parent)
    if not parent.is_dir():
        raise UsageError(f"{flag} {p}: {parent} is not a directory", flag)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {p}: {parent} is not writable", flag)
    _probe_file(parent, flag, p)


def check_folder(path, flag: str) -> None:
    """Refuse, before any work, an output folder that is a file (or lies under one) or cannot
    be written: the refusal names the flag, not the first file the work would have written.
    os.access says yes to root everywhere, /proc included: a missing folder's parent is tried
    by making and removing a folder in it, an existing folder by a probe file."""
    import os
    from pathlib import Path

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {p} is a file, not a directory; give the folder to write in", flag)
    parent = _existing_ancestor(p)
    if not parent.is_dir():
        raise UsageError(f"{flag} {p}: {parent} is a file, not a directory", flag)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {p}: {parent} is not writable", flag)
    if p.exists():
        _probe_file(p, flag, p)
        return
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".simlab-probe-", dir=parent))
    except OSError as exc:
        raise UsageError(f"{flag} {p}: cannot create a folder in {parent} ({exc.strerror or exc})", flag) from None


def _seconds(s: float) -> str:
    """Estimated seconds in words (``TimeEstimate.describe``'s wording)."""
    from studies.engine import TimeEstimate

    return TimeEstimate(s, s, 1).describe()


def _rows_table(rows: list[dict], title: str, grid: list[str]) -> None:
    if not rows:
        print("(no rows)")
        return
    has_exact = "exact_pass_rate" in rows[0]

    def pm(r, k):
        v, s = r.get(k), r.get(f"{k}_mcse")
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "-"
        return f"{v:.4f}" if s is None or not math.isfinite(s) else f"{v:.4f}±{s:.4f}"

    cols = grid + ["method", "estimand", "true", "reps", "pass rate"] + (["exact"] if has_exact else []) + \
        ["inconcl.", "coverage", "bias", "emp SE", "width"]
    table = []
    for r in rows:
        line = [r[g] for g in grid] + [r["method"], r["estimand"][:7], f"{r['true_value']:.4f}", r["n_reps"],
                                       pm(r, "pass_rate")]
        if has_exact:
            v = r.get("exact_pass_rate")
            line.append("-" if v is None or not math.isfinite(v) else f"{v:.4f}")
        line += [pm(r, "inconclusive_rate"), pm(r, "coverage"), pm(r, "bias"), pm(r, "empirical_se"),
                 pm(r, "mean_width")]
        table.append(line)
    print_table(title, cols, table)


# What a file given where a dataset belongs is instead (studies.datasets.file_kind), and where it goes
NOT_A_DATASET = {
    "missing": "no such file",
    "directory": "is a directory; give a dataset file (.nc)",
    "empty": "is an empty file, not a netCDF dataset",
    "record": "is a qualification record (JSON), not a dataset; show it with `simlab qualify show`",
    "certificate": "is a certificate (JSON), not a dataset; check it with `simlab records verify`",
    "theorem": "is a theorem record (JSON), not a dataset; see `simlab records theorem`",
    "spec": "is a study spec (JSON), not a dataset; run it with `simlab study run`",
    "json": "is a JSON file, not a netCDF dataset",
    "text": "is a text file, not a netCDF dataset",
    "binary": "is not a netCDF dataset (no HDF5 signature)",
}


def read_dataset(path: str, field: str):
    """The dataset at ``path``, or a one-line refusal that says what the file is instead."""
    from studies import file_kind

    kind = file_kind(path)
    if kind != "netcdf":  # refused before the netCDF stack is imported (an input error answers at once)
        raise UsageError(f"{path} {NOT_A_DATASET[kind]}", field)
    from studies import DamagedDataset, open_dataset

    try:
        ds = open_dataset(path)
    except DamagedDataset as exc:  # "FILE: damaged or not a simlab dataset (the reader's reason)"
        raise UsageError(str(exc), field) from None
    _check_counts(ds, path, field)
    from studies import check_derived

    why = check_derived(ds)  # a flipped bit in the data: a rate that its counts do not give
    if why:
        raise UsageError(f"{path}: damaged or not a simlab dataset ({why})", field)
    return ds


def _check_counts(ds, path: str, field: str) -> None:
    """Replication counts (the ``n_*`` variables) are whole numbers in [0, n_reps]: an edited or
    damaged file that breaks that is refused, not summarised (it showed "reps -5" with rates)."""
    import numpy as np

    reps = ds.data_vars.get("n_reps")
    for name, var in ds.data_vars.items():
        if not name.startswith("n_") or var.dtype.kind not in "iu":
            continue
        bad = (var < 0) if reps is None or name == "n_reps" or reps.dims != var.dims else (var < 0) | (var > reps)
        if bool(np.any(bad.values)):
            where = "negative counts" if name == "n_reps" else "counts outside [0, n_reps]"
            raise UsageError(f"{path}: damaged or not a simlab dataset ({name} holds {where})", field)


def refuse_foreign_file(path, flag: str, force: bool, report: str | None = None, spec_hash: str | None = None,
                        kind: str | None = None) -> None:
    """Refuse to replace a file simlab did not write (a user's file named by mistake) unless
    ``force``: a dataset, or (``report``: its kind) a JSON report.  With ``spec_hash`` (a study
    run's), a dataset of another study is refused too: a rerun of the same spec replaces its
    own dataset, a typo must not replace another study's results.  With ``kind``, a dataset of
    another kind is refused too (robustness --dataset replaced a study's results)."""
    from pathlib import Path

    from studies import dataset_spec_hash, report_by_simlab, written_by_simlab

    if force or not Path(path).is_file():
        return
    if not (report_by_simlab(path, report) if report else written_by_simlab(path)):
        from studies import file_kind

        if not report and file_kind(path) == "netcdf":  # HDF5 whose attrs cannot be read, or someone else's
            raise UsageError(f"{flag} {path}: damaged or not a simlab dataset; refusing to overwrite it (choose "
                             "another path, or add --force to replace it)", flag)
        what = f"a {report} report" if report else "a dataset"
        raise UsageError(f"{flag} {path} exists and is not {what} simlab wrote; refusing to overwrite it "
                         "(choose another path, or add --force to replace it)", flag)
    if kind is not None and not report:
        from studies import stored_kind

        held_kind = stored_kind(path)
        if held_kind is not None and held_kind != kind:
            raise UsageError(f"{flag} {path} holds a {held_kind} dataset, not a {kind} one; refusing to replace it "
                             "(choose another path, or add --force)", flag)
    held = dataset_spec_hash(path) if spec_hash is not None else None
    if held is not None and held != spec_hash:
        raise UsageError(f"{flag} {path} holds another study's results (spec {held[:19]}..., this spec "
                         f"{spec_hash[:19]}...); refusing to replace them (choose another path, or add --force)", flag)


def check_levels(path: str, margin: float | None, alpha: float | None) -> None:
    """``--margin`` / ``--alpha`` the dataset holds, checked from its coordinates before it is
    read (a level it lacks was refused after 2 s of reading)."""
    from studies import stored_values

    for name, value in (("margin", margin), ("alpha", alpha)):
        held = None if value is None else stored_values(path, name)
        if held is not None and float(value) not in held:
            raise UsageError(f"--{name} {value:g}: not in {path} (it holds {name} "
                             f"{', '.join(f'{v:g}' for v in held)})", f"--{name}")


OTHER_DATASETS = {   # how each other kind of simlab dataset is shown
    "qualification": "a qualification record's scenario data: show the record with `simlab qualify show RECORD.json`",
    "judge": "written by `simlab judge-study`, which prints its table",
    "sizing": "written by `simlab size`, which prints its search and draws its power curve",
    "robustness": "written by `simlab robustness --dataset`, which prints its table",
}


def open_study(path: str, allow_sequential: bool = False):
    """A study dataset (or a sequential one, when allowed), or a one-line refusal naming the file."""
    from studies import dataset_kind, file_kind, stored_kind

    # another kind of dataset is named from its attrs, before the data are read (a sequential
    # one took 3.5-5.8 s, a record's 1.4 s; a judge study's ended in a traceback)
    kind = stored_kind(path) if file_kind(path) == "netcdf" else None
    if kind == "sequential" and not allow_sequential:
        raise UsageError(f"{path}: not a study dataset (a sequential study's; show it with `simlab sequential "
                         "show`)", "file")
    if kind is not None and kind not in ("study", "demo", "sequential"):
        how = OTHER_DATASETS.get(kind, "")
        raise UsageError(f"{path}: not a study dataset (a {kind} dataset{'; ' + how if how else ''})", "file")
    ds = read_dataset(path, "file")
    if allow_sequential and dataset_kind(ds) == "sequential":
        return ds
    if "pass_rate" not in ds.data_vars or "method" not in ds.dims:
        raise UsageError(f"{path}: not a study dataset (no pass_rate by method; written by simlab study run?)",
                         "file")
    return ds


def run_study_run(args: argparse.Namespace) -> None:
    import os
    from pathlib import Path

    from simlab.hashing import short
    from studies.engine import read_spec_file

    if args.no_checkpoint and (args.restart or args.work_dir is not None):
        flag = "--restart" if args.restart else "--work-dir"
        raise UsageError(f"{flag} concerns the on-disk chunks that --no-checkpoint turns off; give one of them", flag)
    raw = read_spec_file(args.spec)  # a missing or malformed file answers before the spec models load
    from studies.engine import parse_spec  # the spec alone (pydantic): a bad spec answers before the engine loads

    try:
        spec = parse_spec(raw, source=str(args.spec))
    except ValueError as exc:  # the spec file's own field (it names it): the field is the spec argument
        raise UsageError(" ".join(str(exc).split()), "spec") from None
    check_device(args, [ref.name for ref in spec.methods])
    out = Path(args.out) if args.out else Path("simlab-out") / f"{spec.name}-{short(spec.hash)}.nc"
    check_writable(out, "--out")
    refuse_spec_as_out(out, args.spec)
    refuse_foreign_file(out, "--out", args.force, spec_hash=spec.hash)
    check_work_dir(args, out)

    import numpy as np

    from simlab.cli._backend import executor_from_args
    from studies.engine import (run_study, study_estimate, study_floor_estimate, study_memory, study_preparation,
                                study_summary_rows)
    chunk = args.chunk_size or spec.chunk_size
    workers = (os.cpu_count() or 1) if args.n_jobs == -1 else args.n_jobs
    workers = getattr(args, "dask_workers", None) or workers  # local dask workers hold their chunks too
    check_memory(args, study_memory(spec, chunk, workers),
                 f"study {spec.name} ({math.prod(spec.shape) if spec.shape else 1:,} grid points x "
                 f"{spec.n_replications:,} replications)")
    say = log_to_stderr(args)
    floor = study_floor_estimate(spec, workers, chunk)   # a huge grid: priced before its points are built
    if floor is not None:
        check_time(args, floor.low, f"study {spec.name} ({math.prod(spec.shape):,} grid points, each at least as "
                                    "costly as its cheapest)")
    with executor_from_args(args, args.n_jobs) as ex:  # run_study locks --out and writes it before chunks go
        built = study_preparation(spec)  # before the pilot, which would pay them unannounced
        prepare = sum(c.seconds for c in built) / max(ex.workers, 1)
        if built:
            what = f"{len(built)} method construction(s) ({built[0].method}: {built[0].driver})"
            check_and_say_time(args, prepare, f"study {spec.name}: preparing {what}", say)
        with first_use_compiles([ref.resolve() for ref in spec.methods], say):   # the pilot loads the kernels
            estimate = study_estimate(spec, ex.workers, chunk)
        files = 0.0   # each task's chunk is written durably and removed at the end, on this disk's time
        if not args.no_checkpoint:
            from studies.engine import chunk_file_seconds

            tasks = (math.prod(spec.shape) if spec.shape else 1) * math.ceil(spec.n_replications / chunk)
            files = tasks * chunk_file_seconds(Path(args.work_dir or DEFAULT_WORK_DIR))
        check_time(args, prepare + estimate.low + files, f"study {spec.name}")
        exact = args.exact or spec.exact
        exact_seconds = 0.0
        if exact:  # priced after the simulation passed: a huge grid is refused before its engines are probed
            from studies.engine import study_exact_estimate

            exact_seconds = study_exact_estimate(spec).low
            check_time(args, prepare + estimate.low + files + exact_seconds,
                       f"study {spec.name} (simulation {estimate.low:.0f} s, exact results {exact_seconds:.0f} s)")
        say(f"study {spec.name}: simulation estimated {estimate.describe()} on {ex.describe()}"
            + (f", and {files:.0f} s writing and removing its {tasks:,} chunk files" if files >= 1.0 else "")
            + (f"; the exact results (exact engines, in this process) {_seconds(exact_seconds)}; in all "
               f"{_seconds(prepare + estimate.low + files + exact_seconds)}" if exact else ""))
        ds = run_study(spec, executor=ex, chunk_size=args.chunk_size,
                       work_dir=None if args.no_checkpoint else (args.work_dir or DEFAULT_WORK_DIR),
                       resume=not args.restart, progress=True if estimate.low + files >= 10 or exact else None,
                       exact=True if args.exact else None, out=out,
                       on_rejected=lambda path, why: say(f"chunk {path} rejected ({why}); computing it again"),
                       on_note=say)
    payload = {"dataset": str(out), "spec_hash": spec.hash, "replications": spec.n_replications,
               "scenarios": int(np.prod(spec.shape)) if spec.shape else 1, "methods": list(spec.method_keys),
               "seconds": ds.attrs["run_seconds"], "tasks": ds.attrs["run_tasks"],
               "tasks_resumed": ds.attrs["run_tasks_resumed"], "dims": list(spec.dims), "rows": study_summary_rows(ds)}

    def render(p: dict) -> None:
        _rows_table(p["rows"], f"study {spec.name} ({p['replications']:,} replications per scenario)", p["dims"])
        print(f"wrote {p['dataset']}  ({p['tasks']} tasks, {p['tasks_resumed']} resumed, {p['seconds']:.1f} s)")

    emit(args, payload, render)


def run_study_show(args: argparse.Namespace) -> None:
    check_levels(args.file, args.margin, args.alpha)
    ds = open_study(args.file)  # a refused file is named before the summary code is imported
    from studies.engine import grid_dims, study_summary_rows

    rows = study_summary_rows(ds, args.margin, args.alpha)
    payload = {"dataset": args.file, "spec_hash": ds.attrs.get("spec_hash"), "spec_name": ds.attrs.get("spec_name"),
               "code_revision": ds.attrs.get("code_revision"), "seed": ds.attrs.get("seed"),
               "dims": grid_dims(ds), "rows": rows}

    def render(p: dict) -> None:
        _rows_table(p["rows"], f"{p['spec_name']}  spec {str(p['spec_hash'])[:12]}  seed {p['seed']}  "
                               f"rev {str(p['code_revision'])[:12]}", p["dims"])

    emit(args, payload, render)


def _plot_png(path) -> bool:
    """Whether ``path`` is a PNG simlab drew: it carries simlab's PNG text key (every plot is
    saved with it; read from the PNG's chunks, without matplotlib).  Such a file may be replaced
    by a new plot; a user's own PNG, matplotlib's included, may not."""
    from studies.plots import is_simlab_png

    return is_simlab_png(path)


def refuse_spec_as_out(out, spec) -> None:
    """``--out`` naming the spec being run: with --force its dataset replaced the spec."""
    from pathlib import Path

    if Path(out).exists() and Path(out).resolve() == Path(spec).resolve():
        raise UsageError(f"--out {out} is the spec file being run; the dataset would replace it (even with --force, "
                         "choose another path)", "--out")


def check_work_dir(args: argparse.Namespace, out) -> None:
    """``--work-dir`` before any work: a folder that can be written (a file there was found after
    the estimate, as a raw errno), and apart from ``--out`` (at or under it, the chunks made a
    folder of the dataset's name and the run was refused at its end)."""
    from pathlib import Path

    if args.work_dir is None or args.no_checkpoint:
        return
    check_folder(args.work_dir, "--work-dir")
    work, target = Path(args.work_dir).resolve(), Path(out).resolve()
    if work == target or target in work.parents or work in target.parents:
        raise UsageError(f"--work-dir {args.work_dir} and --out {out} overlap; the chunks need a folder apart from "
                         "the dataset", "--work-dir")


def check_plot_out(path, flag: str, force: bool) -> None:
    """A plot's path ends in .png, can be written, and is not a user's other file (replaced only
    with ``force``): an existing file may be replaced when it is a plot simlab drew."""
    from pathlib import Path

    from studies.plots import PNG_KEY

    out = Path(path)
    check_writable(out, flag)
    if out.suffix.lower() != ".png":
        raise UsageError(f"{flag} {out}: the plot is a PNG; give a path ending in .png", flag)
    if out.is_file() and not force and not _plot_png(out):
        raise UsageError(f"{flag} {out} exists and is not a plot simlab drew (a PNG with simlab's '{PNG_KEY}' "
                         "text key); refusing to overwrite it (choose another path, or add --force to replace it)",
                         flag)


def run_study_plot(args: argparse.Namespace) -> None:
    from pathlib import Path

    out = Path(args.out) if args.out else Path(args.file).with_suffix(".png")
    check_plot_out(out, "--out", args.force)   # the checks before matplotlib loads: a bad input answers at once
    check_levels(args.file, args.margin, args.alpha)
    ds = open_study(args.file, allow_sequential=True)
    from studies.plots import plot_dataset

    plot_dataset(ds, out, args.margin, args.alpha)
    emit(args, {"plot": str(out)}, lambda p: print(f"wrote {p['plot']}"))


def register(sub, bench_sub) -> None:
    p = sub.add_parser("study", help="operating-characteristics studies (spec -> dataset)")
    ssub = p.add_subparsers(dest="study_command", required=True)
    q = ssub.add_parser("run", help="run a study spec (.toml / .json) and save its dataset")
    q.add_argument("spec", help="study spec file")
    q.add_argument("--out", type=nonempty_path,
                   help="netCDF output (default simlab-out/NAME-HASH.nc); an existing file that simlab "
                        "did not write is refused unless --force")
    q.add_argument("--force", action="store_true",
                   help="replace --out even when it is not a dataset simlab wrote, or holds another study's results")
    q.add_argument("--n-jobs", type=n_jobs, default=1, help="joblib workers, -1 = all cores (default %(default)s)")
    add_backend_arguments(q)
    q.add_argument("--chunk-size", type=positive_int, help="replications per task (default: the spec's)")
    q.add_argument("--work-dir", type=nonempty_path, default=None,
                   help=f"finished chunks of running studies (default {DEFAULT_WORK_DIR})")
    q.add_argument("--no-checkpoint", action="store_true", help="keep no chunks on disk")
    q.add_argument("--restart", action="store_true", help="ignore chunks of an interrupted earlier run")
    q.add_argument("--exact", action="store_true", help="add exact results where an engine applies")
    add_max_memory(q)
    add_max_seconds(q)
    add_device_option(q)
    add_json(q)
    q.set_defaults(func=on_selected_device(run_study_run))
    q = ssub.add_parser("show", help="print a study dataset as a table")
    q.add_argument("file", help="study dataset (.nc) written by simlab study run")
    q.add_argument("--margin", type=finite_float, help="margin to show (default: the dataset's first)")
    q.add_argument("--alpha", type=finite_float, help="one-sided level (default: the dataset's first)")
    add_json(q)
    q.set_defaults(func=run_study_show)
    q = ssub.add_parser("plot", help="pass rate vs true difference per method, to PNG")
    q.add_argument("file", help="study or sequential dataset (.nc)")
    q.add_argument("--out", type=nonempty_path,
                   help="PNG path (default: the dataset path with .png); an existing file that is not a "
                        "plot simlab drew is refused unless --force")
    q.add_argument("--force", action="store_true", help="replace --out even when it is not a plot simlab drew")
    q.add_argument("--margin", type=finite_float, help="margin to plot (default: the dataset's first)")
    q.add_argument("--alpha", type=finite_float, help="one-sided level (default: the dataset's first)")
    add_json(q)
    q.set_defaults(func=run_study_plot)
