"""One home for every dataset simlab writes: provenance attrs, CF-style variable
metadata, an atomic writer and a reader.

Every writer (study, sequential, qualification, sizing, demo, bench) builds its attrs with
:func:`make_attrs` -- in the manner of arviz's ``make_attrs``: the dataset kind, the spec
JSON and its hash, method identities, seed, code revision, package versions and the
creation time -- and writes through :func:`save_dataset` (netCDF, h5netcdf engine) or
:func:`save_json` (JSON records and tables).  Both write a temporary file in the target's
folder, ``fsync`` it and ``os.replace`` it over the target, so a reader (or a crash) never
sees half a file.  ``studies/SCHEMA.md`` documents each kind's dimensions, variables and
attrs.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

SCHEMA_VERSION = "2"  # 2: the one hash form sha256:<hex>; a study's level dimension is `alpha`
DATASET_KINDS = ("study", "sequential", "qualification", "sizing", "demo", "bench", "robustness", "judge")
_PACKAGES = ("simlab", "numpy", "numba", "scipy", "xarray", "h5netcdf", "joblib", "pydantic", "rfc8785",
             "dask", "distributed")

# CF-style ``long_name`` / ``units`` of the variables the writers share (a rate is a
# fraction of replications: units "1", the CF spelling of dimensionless).
_LONG_NAMES: dict[str, tuple[str, str]] = {
    "n_reps": ("replications", "1"),
    "n_pass": ("replications whose method passed (promoted)", "1"),
    "n_fail": ("replications whose method failed", "1"),
    "n_inconclusive": ("replications whose method was inconclusive", "1"),
    "n_promote": ("replications promoted", "1"),
    "n_harm": ("replications stopped for harm", "1"),
    "n_no_promotion": ("replications ending without promotion", "1"),
    "n_estimate": ("replications with a finite estimate", "1"),
    "n_interval": ("replications with both interval bounds", "1"),
    "n_cover": ("intervals containing the true value", "1"),
    "n_lower_above": ("lower bounds above the true value", "1"),
    "n_width": ("intervals with a finite width", "1"),
    "n_bound": ("replications with a bound at stopping", "1"),
    "is_null": ("1 where the true value is at or below -margin (the null)", "1"),
    "mean_estimate": ("mean estimate", "1"),
    "pass_rate": ("fraction of replications passing", "1"),
    "false_pass_rate": ("pass rate where the estimand's true value is at or below -margin", "1"),
    "power": ("pass rate where the estimand's true value is above -margin", "1"),
    "fail_rate": ("fraction of replications failing", "1"),
    "inconclusive_rate": ("fraction of replications inconclusive", "1"),
    "coverage": ("fraction of intervals containing the true value", "1"),
    "lower_miss_rate": ("fraction of lower bounds above the true value", "1"),
    "bias": ("mean estimate minus true value", "1"),
    "empirical_se": ("standard deviation of the estimates", "1"),
    "mean_width": ("mean interval width", "1"),
    "true_value": ("true value of the estimand the method targets", "1"),
    "promote_rate": ("fraction of replications promoted", "1"),
    "harm_rate": ("fraction of replications stopped for harm", "1"),
    "false_promotion_rate": ("promotion rate where the true value is at or below -margin", "1"),
    "expected_clusters": ("mean clusters used at the end of the analysis", "clusters"),
    "expected_trials": ("mean paired trials used at the end of the analysis", "trials"),
    "power_mcse": ("Monte Carlo standard error of power", "1"),
    "cp_lower": ("Clopper-Pearson lower bound of the false-pass rate", "1"),
    "cp_upper": ("Clopper-Pearson upper bound of the false-pass rate", "1"),
    "ci_lower": ("Clopper-Pearson lower bound of power", "1"),
    "ci_upper": ("Clopper-Pearson upper bound of power", "1"),
    "worst_upper": ("worst Clopper-Pearson upper bound of the false-pass rate in the cell", "1"),
    "true_difference_trial": ("true trial-weighted difference, candidate minus baseline", "1"),
    "true_difference_cluster": ("true cluster-weighted difference, candidate minus baseline", "1"),
    "observed_difference_trial": ("recorded trial-weighted difference, candidate minus baseline", "1"),
    "observed_difference_cluster": ("recorded cluster-weighted difference, candidate minus baseline", "1"),
    "throughput": ("replications per second", "s-1"),
}


def package_versions() -> dict[str, str]:
    """Versions of python and the packages a result depends on."""
    return dict(_package_versions())


@functools.lru_cache(maxsize=1)
def _package_versions() -> dict[str, str]:  # importlib.metadata costs ~10 ms a call
    out = {"python": platform.python_version()}
    for p in _PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


@functools.lru_cache(maxsize=1)
def code_revision() -> str:
    """``git rev-parse HEAD`` of the source tree, ``+dirty`` with uncommitted changes
    (``unknown`` outside a git checkout, e.g. an installed wheel)."""
    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def now() -> str:
    """Local time, ISO 8601 with offset (the format of every timestamp attr)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def method_identity(method, label: str | None = None, **extra) -> dict[str, Any]:
    """A method's identity (name, version, source sha256) plus what a reader needs to find
    it again: label, estimand, options, citation."""
    est = getattr(method, "estimand", None)
    return {**method.identity.as_dict(), "label": label or getattr(method, "label", method.name),
            "estimand": str(getattr(est, "value", est)), "options": dict(getattr(method, "options", {})),
            "citation": getattr(method, "citation", ""), **extra}


def make_attrs(kind: str, *, title: str, spec_json: str | None = None, spec_hash: str | None = None,
               methods: Iterable[Mapping[str, Any]] = (), seed: int | None = None,
               created: str | None = None, **extra: Any) -> dict[str, Any]:
    """The provenance attrs of a dataset of ``kind`` (one of ``DATASET_KINDS``).

    ``spec_json``: the spec that produced it (any JSON); ``spec_hash`` defaults to the
    sha256 of its RFC 8785 canonical form.  ``methods``: identity dicts (see
    :func:`method_identity`).  ``extra``: kind-specific attrs (scalars or strings; dicts
    and lists are stored as JSON).  netCDF attrs cannot be None: absent values are left out."""
    if kind not in DATASET_KINDS:
        raise ValueError(f"dataset kind must be one of {', '.join(DATASET_KINDS)}, got {kind!r}")
    if spec_json is not None and spec_hash is None:
        spec_hash = content_hash(json.loads(spec_json))
    attrs: dict[str, Any] = {
        "title": title,
        "dataset_kind": kind,
        "schema_version": SCHEMA_VERSION,
        "Conventions": "CF-1.10",
        "spec_json": spec_json,
        "spec_hash": spec_hash,
        "method_identities": json.dumps(list(methods), sort_keys=True),
        "seed": None if seed is None else int(seed),
        "code_revision": code_revision(),
        "package_versions": json.dumps(package_versions(), sort_keys=True),
        "created": created or now(),
    }
    for k, v in extra.items():
        attrs[k] = json.dumps(v, sort_keys=True, default=float) if isinstance(v, (dict, list, tuple)) else v
    return {k: v for k, v in attrs.items() if v is not None}


def dataset_kind(ds) -> str | None:
    """The kind of a dataset (``attrs.dataset_kind``; datasets written before the schema
    carried ``study_kind = "sequential"`` or nothing for a study)."""
    kind = ds.attrs.get("dataset_kind") or ds.attrs.get("study_kind")
    if kind is None and "spec_hash" in ds.attrs and "pass_rate" in ds:
        return "study"
    return kind


def describe(ds):
    """Add CF ``long_name`` / ``units`` to the variables of ``ds`` that lack them (in place;
    ``*_mcse``, ``*_cp_lower/_upper`` and ``exact_*`` get their base variable's words)."""
    for name in list(ds.data_vars):
        var = ds[name]
        base, what = name, ""
        for prefix, words in (("exact_", "exact "),):
            if base.startswith(prefix):
                base, what = base[len(prefix):], words
        for suffix, words in (("_mcse", "Monte Carlo standard error of "),
                              ("_cp_lower", "Clopper-Pearson lower bound of "),
                              ("_cp_upper", "Clopper-Pearson upper bound of ")):
            if base.endswith(suffix) and base not in _LONG_NAMES:
                base, what = base[:-len(suffix)], words + what
        if base in _LONG_NAMES:
            long_name, units = _LONG_NAMES[base]
            var.attrs.setdefault("long_name", what + long_name)
            var.attrs.setdefault("units", units)
    return ds


def same_data(a, b) -> bool:
    """True when two datasets hold bitwise the same variables and coordinates (NaN equal
    to NaN; text equal whether stored as object or fixed-width strings, as a netCDF round
    trip returns it; attrs -- timestamps, revision -- are not compared)."""
    import numpy as np

    if set(a.data_vars) != set(b.data_vars) or set(a.coords) != set(b.coords):
        return False
    for name in list(a.data_vars) + list(a.coords):
        x, y = a[name].values, b[name].values
        kx, ky = ("T" if k in "OUS" else k for k in (x.dtype.kind, y.dtype.kind))
        if x.shape != y.shape or kx != ky or a[name].dims != b[name].dims:
            return False
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            return False
    return True


# ---------------------------------------------------------------- atomic writers
@contextlib.contextmanager
def _atomic_target(path: str | Path):
    """Yield a temporary path beside ``path``; on success fsync it and rename it over
    ``path`` (then fsync the folder, so the rename itself is durable)."""
    p = Path(path)
    check_output_path(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_writers_temporaries(p)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every platform can open a folder
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _remove_dead_writers_temporaries(path: Path) -> None:
    """A writer killed before its rename leaves ``.<name>.<pid>.tmp``; remove those whose
    pid is no longer alive (a live writer's temporary is left alone)."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name[len(path.name) + 2:-len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                tmp.unlink()
        except PermissionError:  # alive, another user's
            pass


def check_output_path(path: str | Path) -> Path:
    """Refuse, before any work, an output path that cannot be written: a folder in its
    place, or a parent that is a file (an error naming the path)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"output {p} is a directory; give a file name")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"output {p}: {parent} is not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"output {p}: cannot write in {parent}")
            break
    return p


def check_output_dir(path: str | Path) -> Path:
    """Refuse, before any work, an output folder that cannot be made: a file in its place
    or on its path (an error naming the path)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"output folder {p} is not a directory")
    check_output_path(p / "probe")
    return p


def save_dataset(ds, path: str | Path, compress: bool = False) -> Path:
    """Write ``ds`` as netCDF (h5netcdf) to ``path`` atomically, creating folders;
    ``compress``: zlib level 6 on every variable (qualification datasets)."""
    encoding = None
    if compress:
        encoding = {v: {"zlib": True, "complevel": 6} for v in list(ds.data_vars) + list(ds.coords)}
    with _atomic_target(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf", encoding=encoding)
    return Path(path)


def save_json(payload: Any, path: str | Path) -> Path:
    """Write ``payload`` (a JSON-able object, or a ready JSON string) atomically."""
    text = payload if isinstance(payload, str) else json.dumps(payload, indent=2, sort_keys=True, default=float)
    with _atomic_target(path) as tmp:
        tmp.write_text(text)
    return Path(path)


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"  # netCDF-4 files are HDF5 files: this is their first 8 bytes
# What h5py / h5netcdf / xarray raise for a damaged file: HDF5's own errors come through h5py as
# OSError, RuntimeError ("incorrect metadata checksum" while iterating attrs), KeyError ("Unable
# to synchronously open object") or ValueError, by where the damage lies.
READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError)


def written_by_simlab(path: str | Path) -> bool:
    """Whether ``path`` is a dataset simlab wrote (an HDF5/netCDF file whose attrs name one of
    ``DATASET_KINDS``, or a study written before the schema: ``spec_hash`` with ``study_kind``).
    Reads the signature and the root attrs only, never the data."""
    return stored_kind(path) is not None


def stored_kind(path: str | Path) -> str | None:
    """The kind (one of ``DATASET_KINDS``) of the dataset simlab wrote at ``path``, or None (not
    one: not HDF5, damaged, someone else's).  Reads the signature and the root attrs only."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            if fh.read(8) != HDF5_SIGNATURE:
                return None
        import h5py

        with h5py.File(p, "r") as f:
            kind = f.attrs.get("dataset_kind", f.attrs.get("study_kind"))
            legacy = "spec_hash" in f.attrs
    except READ_ERRORS:  # a damaged file is not one simlab wrote (as far as anyone can tell)
        return None
    if isinstance(kind, bytes):
        kind = kind.decode(errors="replace")
    if kind is None and legacy:
        return "study"
    return kind if kind in DATASET_KINDS else None


def stored_values(path: str | Path, name: str) -> list | None:
    """The values of coordinate ``name`` of a netCDF file (read with h5py: nothing else is
    read), or None (not HDF5, damaged, no such variable): lets a command check a level it was
    asked for before the dataset is read."""
    try:
        with open(path, "rb") as fh:
            if fh.read(8) != HDF5_SIGNATURE:
                return None
        import h5py

        with h5py.File(path, "r") as f:
            var = f.get(name)
            return None if var is None or var.ndim != 1 else var[()].tolist()
    except READ_ERRORS:
        return None


def dataset_spec_hash(path: str | Path) -> str | None:
    """The ``spec_hash`` root attribute of a dataset simlab wrote (the study it holds), or None
    (no such attribute, or not an HDF5 file).  Reads the attrs only, never the data."""
    try:
        with open(path, "rb") as fh:
            if fh.read(8) != HDF5_SIGNATURE:
                return None
        import h5py

        with h5py.File(path, "r") as f:
            value = f.attrs.get("spec_hash")
    except READ_ERRORS:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else None if value is None else str(value)


def report_by_simlab(path: str | Path, kind: str) -> bool:
    """Whether ``path`` is a JSON report of ``kind`` (its ``"kind"`` field, e.g. ``robustness``)
    that simlab wrote -- a file a rerun may replace."""
    try:
        doc = json.loads(Path(path).read_text())
    except (ValueError, OSError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == kind and "code_revision" in doc


def file_kind(path: str | Path) -> str:
    """What a file that a reader refused is, for its error message: ``missing``,
    ``directory``, ``empty``, ``netcdf`` (an HDF5 file), ``record`` / ``certificate`` /
    ``theorem`` (qualification JSON), ``spec`` (a study spec), ``json``, ``text`` or ``binary``."""
    p = Path(path)
    if not p.exists():
        return "missing"
    if p.is_dir():
        return "directory"
    try:
        with open(p, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return "binary"
    if not head:
        return "empty"
    if head.startswith(HDF5_SIGNATURE):
        return "netcdf"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary"
    if text.lstrip()[:1] in "{[":
        try:
            doc = json.loads(p.read_text())
        except (ValueError, OSError, RecursionError):   # nested past the parser's depth: not a document of ours
            return "text"
        if isinstance(doc, dict):
            for key, kind in (("record_sha256", "record"), ("certificate_sha256", "certificate"),
                              ("theorem_sha256", "theorem")):
                if key in doc:
                    return kind
            if "methods" in doc and ("scenario" in doc or "grid" in doc):
                return "spec"
        return "json"
    return "text"


class DamagedDataset(ValueError):
    """A file that the netCDF reader cannot read (damaged, cut short, or HDF5 that is not netCDF)."""


def open_dataset(path: str | Path):
    """Read a dataset written by :func:`save_dataset` fully into memory (a missing file is
    a ``ValueError``; one the reader cannot read a :class:`DamagedDataset` naming the file)."""
    import gc
    import sys

    import xarray as xr

    p = Path(path)
    if not p.exists():
        raise ValueError(f"no such dataset: {p}")
    hook = sys.unraisablehook
    try:
        try:  # phony_dims named: an HDF5 file without dimension scales is read without xarray's UserWarning
            with xr.open_dataset(p, engine="h5netcdf", phony_dims="access") as ds:
                return ds.load()
        except READ_ERRORS as exc:  # one home for the reader's errors: every command reading a dataset comes here
            reason = _plain_read_error(exc)
            # h5netcdf's File.__del__ of a file its __init__ could not open fails in close() ("Exception
            # ignored ... AttributeError: _writable", a traceback on stderr): let it die here, silently
            sys.unraisablehook = lambda unraisable: None
        gc.collect()
    finally:
        sys.unraisablehook = hook
    raise DamagedDataset(f"{p}: damaged or not a simlab dataset ({reason})")


def _plain_read_error(exc: BaseException) -> str:
    """Plain words for a reader's error: HDF5's own text ("Unable to synchronously open file
    (truncated file: eof = 40000, sblock->base_addr = 0, ...)") names its internals, not the damage."""
    import errno

    text = str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).lower()
    if (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM)) or "permission denied" in text:
        return "cannot be read (permission denied)"
    if "truncated file" in text or "actual len exceeds eoa" in text or "past end of allocation" in text:
        return "cut short"
    if "file signature not found" in text:
        return "not a netCDF/HDF5 file"
    if "checksum" in text:
        return "a checksum does not match: a changed byte"
    if isinstance(exc, UnicodeDecodeError):
        return "text that does not decode: a changed byte"
    return "a broken internal structure"


# What a study or sequential dataset derives from its counts (studies.engine.measures, .sequential):
# (rate, count, denominator, the is_null value where the rate is defined -- NaN elsewhere -- or None).
_DERIVED_RATES = (
    ("pass_rate", "n_pass", "n_reps", None), ("fail_rate", "n_fail", "n_reps", None),
    ("inconclusive_rate", "n_inconclusive", "n_reps", None), ("coverage", "n_cover", "n_interval", None),
    ("lower_miss_rate", "n_lower_above", "n_interval", None), ("false_pass_rate", "n_pass", "n_reps", 1),
    ("power", "n_pass", "n_reps", 0), ("promote_rate", "n_promote", "n_reps", None),
    ("harm_rate", "n_harm", "n_reps", None), ("no_promotion_rate", "n_no_promotion", "n_reps", None),
    ("false_promotion_rate", "n_promote", "n_reps", 1), ("power", "n_promote", "n_reps", 0),
)
# every replication has exactly one outcome
_OUTCOMES = (("n_reps", ("n_pass", "n_fail", "n_inconclusive")), ("n_reps", ("n_promote", "n_harm", "n_no_promotion")))


def check_derived(ds) -> str:
    """Cross-check what a dataset stores twice: outcome counts add up to ``n_reps``, and every
    rate (and its ``_mcse``) equals what its counts give, within float rounding.  A flipped bit
    in the data bytes (which HDF5 does not checksum) was shown as a valid figure.  Returns ""
    when consistent, else a one-line reason naming the variable and the first cell.  Vectorised;
    a relation whose variables are absent or lie on other dimensions is skipped."""
    import numpy as np

    def same_dims(*names):  # numbers on one set of dimensions (a foreign layout is not judged here)
        return all(n in ds.data_vars and ds[n].dtype.kind in "iuf" for n in names) and \
            len({ds[n].dims for n in names}) == 1

    def where(bad, dims) -> str:
        cells = np.argwhere(bad)
        if not len(cells):
            return ""
        at = ", ".join(f"{d}={_coord_text(ds, d, i)}" for d, i in zip(dims, cells[0])) or "its one cell"
        return f" at {at}" + (f" and {len(cells) - 1} other cell(s)" if len(cells) > 1 else "")

    for total, parts in _OUTCOMES:
        if same_dims(total, *parts):
            got = sum(ds[k].values.astype(np.int64) for k in parts)
            bad = got != ds[total].values
            if bad.any():
                return f"{' + '.join(parts)} do not add up to {total}{where(bad, ds[total].dims)}"
    null = ds.data_vars.get("is_null")
    for name, count, denom, defined in _DERIVED_RATES:
        if not same_dims(name, count, denom):
            continue
        x, n = ds[count].values.astype(np.float64), ds[denom].values.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(n > 0, x / n, np.nan)
            expected = {"": p, "_mcse": np.where(n > 0, np.sqrt(p * (1 - p) / n), np.nan)}
        for suffix, want in expected.items():
            var = ds.data_vars.get(name + suffix)
            if var is None or var.dims != ds[name].dims or var.dtype.kind not in "iuf":
                continue
            got = var.values.astype(np.float64)
            if defined is not None:  # NaN off its half of the grid: there by is_null, or (without it) where stored
                keep = (null.values == defined) if null is not None and null.dims == var.dims else np.isfinite(got)
                want = np.where(keep, want, np.nan)
            bad = ~np.isclose(got, want, rtol=1e-12, atol=0.0, equal_nan=True)
            if bad.any():
                return f"{name + suffix} disagrees with {count} / {denom}{where(bad, var.dims)}"
    return ""


def _coord_text(ds, dim: str, i: int) -> str:
    if dim not in ds.coords:
        return str(int(i))
    v = ds[dim].values[i]
    return str(v.item() if hasattr(v, "item") else v)


__all__ = ["DATASET_KINDS", "SCHEMA_VERSION", "make_attrs", "method_identity", "package_versions", "code_revision",
           "now", "dataset_kind", "describe", "same_data", "save_dataset", "save_json", "open_dataset", "DamagedDataset",
           "check_derived",
           "check_output_path", "check_output_dir", "written_by_simlab", "file_kind"]
from simlab.hashing import content_hash
