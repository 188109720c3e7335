"""Argument helpers shared by the command modules: the parser class (argparse errors follow
the error contract), checked number types, scenario/table/option parsing, the memory limit."""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import weakref
from typing import Any, Callable

from simlab.cli._output import UsageError

# ---------------------------------------------------------------- the parser


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, refusing a second value: ``--alpha 0.025 --alpha 0.2`` silently
    decided at 0.2 (repeatable options use ``append``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        # the namespaces this action has filled, by id (argparse's Namespace is unhashable);
        # weak, so an id reused by a later parse is not mistaken for this one
        seen = self.__dict__.setdefault("_filled", weakref.WeakValueDictionary())
        if seen.get(id(namespace)) is namespace:
            parser.error(f"argument {'/'.join(self.option_strings) or self.dest}: given more than once "
                         f"({option_string or self.dest} takes one value)")
        seen[id(namespace)] = namespace
        super().__call__(parser, namespace, values, option_string)


class Parser(argparse.ArgumentParser):
    """``error`` raises :class:`UsageError` (main turns it into exit 2, JSON under ``--json``);
    a value such as ``-1,0,0,0`` or ``-0.5`` reaches its option's validator instead of being
    read as an unknown flag; an option that takes one value refuses a second."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str):  # noqa: D401 - argparse's hook
        m = re.search(r"argument ([^:]+?):", message)
        field = None
        if m:
            field = m.group(1).split("/")[-1].strip()
        else:
            m = re.search(r"arguments are required: (\S+?)(,|$)", message)
            field = m.group(1) if m else None
        raise UsageError(f"{self.prog}: {message}", field)


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


# ---------------------------------------------------------------- checked numbers


def checked(convert: Callable[[str], Any], ok: Callable[[Any], bool], requirement: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``convert(text)`` that must satisfy ``ok`` (nan fails every
    comparison, so it is refused too); the error reads ``must be <requirement>, got 'text'``."""
    def parse(text: str):
        try:
            v = convert(text)
        except ValueError:
            v = None
        if v is None or not ok(v):
            raise argparse.ArgumentTypeError(f"must be {requirement}, got {text!r}")
        return v
    parse.__name__ = requirement
    return parse


# the one-sided level every method takes (methods.check_alpha): refused by the parser, before any work
one_sided_alpha = checked(float, lambda v: 0.0 < v <= 0.25, "in (0, 0.25] (the one-sided level)")


def int_at_least(lo: int) -> Callable[[str], int]:
    return checked(int, lambda v: v >= lo, f"an integer >= {lo}")


def int_between(lo: int, hi: int) -> Callable[[str], int]:
    return checked(int, lambda v: lo <= v <= hi, f"an integer in [{lo:,}, {hi:,}]")


# a certified design's bounds, checked by the parser (before the studies load): at least two
# clusters (methods.qualification.certificate.CertifiedDesign), at most the simulator's
# scenario (simlab.scenario.PairedScenario: clusters <= 10^6, trials per cluster <= 10^5)
DESIGN_CLUSTERS = int_between(2, 1_000_000)
DESIGN_TRIALS = int_between(1, 100_000)
SCENARIO_CLUSTERS = int_between(1, 1_000_000)  # a scenario to simulate may have one cluster


def float_at_least(lo: float, strict: bool = False) -> Callable[[str], float]:
    return checked(float, (lambda v: v > lo) if strict else (lambda v: lo <= v < math.inf),
                   f"a number {'>' if strict else '>='} {lo:g}")


_n_jobs_form = checked(int, lambda v: v >= 1 or v == -1, ">= 1 or -1 (all cores)")  # joblib's convention


def at_most_per_core(n: int, what: str) -> int:
    """``n`` processes on this machine, at most 4 per core (1000 on 2 cores started a thousand
    processes before any estimate and hung past --max-seconds)."""
    most = 4 * (os.cpu_count() or 1)
    if n > most:
        raise argparse.ArgumentTypeError(f"at most {most} {what} on this machine's {os.cpu_count()} cores, got {n}")
    return n


def n_jobs(text: str) -> int:
    """``--n-jobs``: worker processes, -1 = all cores (:func:`at_most_per_core`)."""
    return at_most_per_core(_n_jobs_form(text), "worker processes")
finite_float = checked(float, math.isfinite, "a finite number")
positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)
nonnegative_float = float_at_least(0.0)
positive_float = float_at_least(0.0, strict=True)
open_unit = checked(float, lambda v: 0.0 < v < 1.0, "in (0, 1)")          # a margin, a rate strictly inside
unit_open_top = checked(float, lambda v: 0.0 <= v < 1.0, "in [0, 1)")     # an intra-cluster correlation bound
unit_closed = checked(float, lambda v: 0.0 <= v <= 1.0, "in [0, 1]")      # a probability

# ---------------------------------------------------------------- memory limit

DEFAULT_MAX_MEMORY = 4 << 30  # 4 GiB: fits beside the OS and a browser on an 8-16 GB laptop
MEMORY_ENV = "SIMLAB_MAX_MEMORY"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def memory_size(text: str) -> int:
    """``"4G"``, ``"512MiB"``, ``"2e9"`` -> bytes (binary units)."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"must be a size such as 4G, 512M or 2e9 (bytes), got {text!r}")
    try:
        v = float(m.group(1)) * _UNITS[m.group(2).lower()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a size such as 4G, 512M or 2e9 (bytes), got {text!r}") from None
    if not 0 < v < math.inf:  # 1e400 is infinite: int() of it was a raw "cannot convert float infinity"
        raise argparse.ArgumentTypeError(f"must be a finite size > 0, got {text!r}")
    return int(v)


def default_max_memory() -> int:
    text = os.environ.get(MEMORY_ENV)
    if not text:
        return DEFAULT_MAX_MEMORY
    try:
        return memory_size(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"environment {MEMORY_ENV}: {exc}", MEMORY_ENV) from None


def add_max_memory(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                   help=f"refuse work estimated to need more memory (default ${MEMORY_ENV} or 4G)")


def check_memory(args: argparse.Namespace, need_bytes: float, what: str) -> None:
    """Refuse (exit 2) before ``what`` when its estimated memory exceeds ``--max-memory``."""
    limit = args.max_memory if getattr(args, "max_memory", None) else default_max_memory()
    if need_bytes > limit:
        raise UsageError(f"{what} needs an estimated {_gib(need_bytes)} of memory, over the limit of "
                         f"{_gib(limit)}; reduce the work or raise --max-memory (or ${MEMORY_ENV})", "--max-memory")


DEFAULT_MAX_SECONDS = 600.0  # ten minutes: beyond it, a laptop run is more likely a typo than a plan
SECONDS_ENV = "SIMLAB_MAX_SECONDS"


def nonempty_path(text: str) -> str:
    """A path to read or write: an empty one (a shell variable that was not set) is refused rather
    than read as "use the default", "write nothing" or the current folder (``--trusted ""`` trusted
    every key there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name the file or folder (or leave the option out)")
    return text


def add_max_seconds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-seconds", type=positive_float, default=None, metavar="S",
                   help=f"refuse work estimated to take longer (default ${SECONDS_ENV} or {DEFAULT_MAX_SECONDS:g})")


def time_limit(args: argparse.Namespace) -> float:
    """``--max-seconds``, else ``$SIMLAB_MAX_SECONDS``, else the default."""
    limit = getattr(args, "max_seconds", None)
    return env_seconds() if limit is None else limit


def env_seconds() -> float:
    """``$SIMLAB_MAX_SECONDS`` under --max-seconds' own rule (a finite number > 0), else the
    default: nan disabled the limit, and -1 was refused as "--max-seconds ... over the limit of -1 s"."""
    text = os.environ.get(SECONDS_ENV)
    if not text:
        return DEFAULT_MAX_SECONDS
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0.0):
        raise UsageError(f"environment {SECONDS_ENV} must be a finite number of seconds > 0, got {text!r}",
                         SECONDS_ENV)
    return v


def check_environment() -> None:
    """The environment settings every command may read, checked before any work (each error
    names its variable): ``$SIMLAB_MAX_SECONDS``; ``$SIMLAB_RECORDS``, which must name a folder
    (a typo made every method "not covered" and certificates go to a new folder)."""
    env_seconds()
    records = os.environ.get("SIMLAB_RECORDS")
    if records and not os.path.isdir(records):
        what = "a file" if os.path.exists(records) else "no such folder"
        raise UsageError(f"environment SIMLAB_RECORDS={records!r}: {what}; it must name the folder of qualification "
                         "records (or unset it)", "SIMLAB_RECORDS")


def check_and_say_time(args: argparse.Namespace, seconds: float, what: str, say, on: str = "") -> None:
    """:func:`check_time`, then ``say`` the estimate: ``what: estimated ... [on ...]``."""
    from studies.engine import TimeEstimate

    check_time(args, seconds, what)
    say(f"{what}: estimated {TimeEstimate(seconds, seconds, 1).describe()}{f' on {on}' if on else ''}")


# a kernel that compiles on first use is announced once the command has waited this long for it:
# a quick compile says nothing, and nothing is said for work refused before any kernel ran
COMPILE_NOTICE_AFTER = 1.0


@contextlib.contextmanager
def first_use_compiles(methods, say):
    """Inside the block, announce (after :data:`COMPILE_NOTICE_AFTER` s) the kernels of
    ``methods`` that compile before they first run here -- a first use after an install or
    upgrade: seconds, a few minutes for the largest -- which no estimate of the work counts;
    yields their names."""
    import threading

    from methods import first_use_compiles as cold_kernels

    cold = [k for m in methods for k in cold_kernels(m)]
    timer = None
    if cold:
        def announce() -> None:
            still = [k for m in methods for k in cold_kernels(m)]   # those compiled by now are not named
            if not still:
                return
            try:
                say(f"compiling {len(still)} kernel{'s' * (len(still) != 1)} first ({', '.join(still)}): a first "
                    "use after an install or upgrade, cached for later runs; seconds each, a few minutes for "
                    "bayes_hierarchical's; not counted in --max-seconds")
            except BaseException:   # an interrupt pending for the main thread is the main thread's to raise
                pass

        timer = threading.Timer(COMPILE_NOTICE_AFTER, announce)
        timer.daemon = True
        timer.start()
    try:
        yield cold
    finally:
        if timer is not None:
            timer.cancel()


def deadline_of(args: argparse.Namespace) -> float:
    """``time.monotonic()`` by which work that starts now must stop: the time limit from now.  The
    estimate refuses work whose low end already overruns the limit; a run whose estimate
    straddles it starts, and is stopped at the limit (``studies.qualify.DeadlineReached``), not
    run past it."""
    import time

    return time.monotonic() + time_limit(args)


class LimitSteps:
    """``before_step(what)`` for work checked at steps (sections, rows, runs): past ``--max-seconds``
    since it was made (or :meth:`restart`), it raises :func:`over_time` naming the step it did not
    start, so that the work stops at the limit rather than after it."""

    def __init__(self, args: argparse.Namespace, command: str, kept: str):
        import time

        self.limit, self.command, self.kept, self._clock = time_limit(args), command, kept, time.perf_counter
        self.restart()

    def restart(self) -> None:
        """Count from now (what came before is not the work the limit is for: a first compile)."""
        self.started = self._clock()

    def __call__(self, what: str) -> None:
        so_far = self._clock() - self.started
        if so_far > self.limit:
            raise over_time(Exception(f"stopped at the limit of {self.limit:g} s ({so_far:.1f} s so far), before "
                                      f"{what}"), self.command, self.kept)


def over_time(exc: Exception, what: str, kept: str = "") -> UsageError:
    """The error of work stopped at its deadline (exit 2, field ``--max-seconds``); ``kept``
    says what of it was kept."""
    return UsageError(f"{what} {exc}{'; ' + kept if kept else ''}; reduce the work or raise --max-seconds (or "
                      f"${SECONDS_ENV})", "--max-seconds")


def check_time(args: argparse.Namespace, need_seconds: float, what: str) -> None:
    """Refuse (exit 2) before ``what`` when its estimated time exceeds ``--max-seconds``."""
    limit = time_limit(args)
    if need_seconds > limit:
        raise UsageError(f"{what} would take an estimated {need_seconds:.3g} s, over the limit of {limit:g} s; reduce "
                         f"the work or raise --max-seconds (or ${SECONDS_ENV})", "--max-seconds")


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.3g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.3g} MiB"


# ---------------------------------------------------------------- tables, options, scenarios

_INT64_MAX = (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1   # a cell as the kernels hold it (int32 tables); their totals are int64


def parse_table(text: str, index: int, flag: str = "--table") -> list[int]:
    parts = text.split(",")
    try:
        row = [int(p) for p in parts]
    except ValueError:
        row = []
    if len(row) != 4 or any(v < 0 or v > _INT32_MAX for v in row):
        raise UsageError(f"{flag} #{index + 1} ({text!r}) must be four integers in [0, 2^31) "
                         "n11,n10,n01,n00 (both pass, baseline only, candidate only, both fail)", flag)
    return row


def parse_tables(texts: list[str], flag: str = "--table", order: str = "one per cluster"):
    if not texts:
        raise UsageError(f"give at least one {flag} n11,n10,n01,n00 ({order})", flag)
    rows = [parse_table(t, i, flag) for i, t in enumerate(texts)]
    total = sum(sum(r) for r in rows)  # Python ints: exact, so an int64 overflow is caught here
    if total > _INT64_MAX:
        raise UsageError(f"{flag} counts sum to {total} trials, more than 2^63 - 1 (the kernels count in int64)", flag)
    import numpy as np  # after the checks: a malformed table answers without it

    return np.array(rows, dtype=np.int64)


def parse_options(items: list[str]) -> dict[str, float | str]:
    """``--option key=value`` items: a number, or a named choice (``spending=pocock``) that the
    method's catalogue entry resolves (``check_methods``)."""
    out: dict[str, float | str] = {}
    for item in items:
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key or not value:
            raise UsageError(f"--option {item!r} must be key=value (a number, or a named choice)", "--option")
        try:
            parsed: float | str = float(value)
        except ValueError:
            parsed = value  # a named choice, or an error naming the option when the method is checked
        if key in out:  # the last one silently winning would hide a typo
            raise UsageError(f"--option {key!r} is given more than once; give each option once", "--option")
        out[key] = parsed
    return out


def option_error(exc: ValueError, options: dict) -> UsageError | None:
    """An error a method raised about one of the ``--option`` values given (its range is
    checked where the method prepares), as the ``--option`` field's error; else None."""
    text = str(exc)
    if any(re.search(rf"\boption '?{re.escape(key)}\b", text) for key in options):
        return UsageError(f"--option: {text}", "--option")
    return None


def parse_looks_text(text: str) -> None:
    """Refuse a start:stop:step schedule with more looks than any method supports *before*
    it is expanded (``1:1000000000:1`` would build a billion-element tuple)."""
    parts = text.strip().split(":")
    if len(parts) == 3:
        try:
            start, stop, step = (int(p) for p in parts)
        except ValueError:
            return  # the library's parser words this error
        if step >= 1 and stop >= start and (stop - start) // step + 1 > 10_000:
            raise UsageError(f"--looks {text!r} lists {(stop - start) // step + 1} looks; at most 10000 are "
                             "supported", "--looks")


def check_power(args: argparse.Namespace) -> None:
    """``--power`` must exceed ``--alpha``: a level-alpha test passes with probability about
    alpha with no data at all, so a lower target asks nothing (``size --power 1e-320`` then
    searched past its time limit)."""
    if args.power <= args.alpha:
        raise UsageError(f"--power {args.power:g} must exceed --alpha {args.alpha:g} (the target power of a level-"
                         f"alpha test)", "--power")


def check_methods(names, flag: str, kind: str | None = None, options: dict | None = None) -> None:
    """Every name in ``names`` is a registered method (of ``kind``, taking ``options``), read
    from the method catalogue (``methods.registry.info``) before any layer that runs methods
    is imported: a mistyped name or option answers in a fraction of a second, naming its flag."""
    from methods import info, names as registered, option_values

    for name in ([names] if isinstance(names, str) else names):
        try:
            entry = info(name)
        except KeyError as exc:
            raise UsageError(str(exc.args[0]) if exc.args else f"unknown method {name!r}", flag) from None
        if kind is not None and entry.kind != kind:
            word = "fixed-sample" if kind == "fixed" else kind
            raise UsageError(f"method {name!r} is not a {word} method; {word} methods: "
                             f"{', '.join(registered(kind))}", flag)
        if options:
            try:
                option_values(entry.name, entry.options, entry.choices, options, entry.ranges)
            except ValueError as exc:
                raise UsageError(f"--option: {exc}", "--option") from None


def add_scenario_args(p: argparse.ArgumentParser, clusters: int = 30, trials: int = 3, rho: float = 0.1,
                      cells: str = "0.90,0.04,0.03,0.03") -> None:
    g = p.add_argument_group("scenario")
    g.add_argument("--cells", default=None, help=f"p11,p10,p01,p00 of a trial pair (default {cells})")
    p.set_defaults(default_cells=cells)
    g.add_argument("--baseline", type=unit_closed, help="baseline pass rate (with --difference and --discordance)")
    g.add_argument("--difference", type=finite_float, help="true difference candidate - baseline")
    g.add_argument("--discordance", type=unit_closed, help="P(outcomes differ) = p10 + p01")
    g.add_argument("--clusters", type=SCENARIO_CLUSTERS, default=clusters,
                   help="independent clusters K (default %(default)s)")
    g.add_argument("--trials", type=DESIGN_TRIALS, default=trials, help="trials per cluster M (default %(default)s)")
    # checked here in the words every flag uses (it said "Input should be less than 1", pydantic's)
    g.add_argument("--rho", type=unit_open_top, default=rho, help="intra-cluster correlation in [0, 1) (default "
                                                                  "%(default)s)")


def scenario_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The scenario arguments as a template: rates (baseline, difference, discordance) or cells."""
    t: dict[str, Any] = {"clusters": args.clusters, "trials": args.trials, "rho": args.rho}
    rates = {"baseline": args.baseline, "difference": args.difference, "discordance": args.discordance}
    if any(v is not None for v in rates.values()):
        missing = [k for k, v in rates.items() if v is None]
        if missing:
            raise UsageError("--baseline, --difference and --discordance go together (missing "
                             + ", ".join("--" + k for k in missing) + ")", "--" + missing[0])
        if args.cells is not None:
            raise UsageError("give the scenario's cells one way: --cells, or --baseline, --difference and "
                             "--discordance, not both", "--cells")
        t.update(rates)
    else:
        text = args.cells if args.cells is not None else args.default_cells
        try:
            t["cells"] = [float(x) for x in text.split(",")]
        except ValueError:
            raise UsageError(f"--cells must be four comma-separated numbers, got {text!r}", "--cells") from None
    return t


def scenario_from_args(args: argparse.Namespace):
    from simlab.scenario import FixedSize, PairedScenario

    t = scenario_fields(args)
    common = dict(clusters=t["clusters"], cluster_size=FixedSize(trials=t["trials"]), rho=t["rho"])
    if "cells" in t:
        return PairedScenario(cells=tuple(t["cells"]), **common)
    return PairedScenario.from_rates(t["baseline"], t["difference"], t["discordance"], **common)


def add_device_option(p: argparse.ArgumentParser) -> None:
    """``--device {cpu,gpu}``: the command's simulations run under ``studies.engine.device.using``,
    which every simulation it calls consults (same counts on either device)."""
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                   help="where simulations run; gpu: cluster-moment methods on a CUDA GPU, "
                        "same counts as cpu (default %(default)s)")


def check_device(args: argparse.Namespace, names) -> None:
    """``--device gpu`` with methods the GPU path does not run is refused from the catalogue,
    before the studies load (it was refused after them, in 1.6-2 s); so is ``--device gpu`` where
    no GPU (nor numba's CUDA simulator) is there."""
    if getattr(args, "device", "cpu") != "gpu":
        return
    from methods import gpu_refusal, info

    bad = [n for n in names if not info(n).gpu]
    if bad:
        raise UsageError(f"--device gpu: {gpu_refusal(bad)}", "--device")
    from simlab import gpu   # numba's CUDA probe (about 0.4 s), still before the methods and the studies load

    if not gpu.available():   # it was refused where a simulation started (1-3 s), or not at all where an
        raise UsageError(f"--device gpu: {gpu.why_unavailable()}", "--device")   # exact engine applied


def on_selected_device(func: Callable) -> Callable:
    """Wrap a command function so it runs on the device its ``--device`` names."""
    def run(args: argparse.Namespace):
        from studies.engine import using

        with using(args.device):
            return func(args)
    run.__name__ = getattr(func, "__name__", "run")
    return run


def range_pair(text: str) -> tuple[float, float]:
    """``LO,HI`` -> (lo, hi), both finite numbers with lo <= hi."""
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise argparse.ArgumentTypeError(f"expected finite LO <= HI, got {text!r}")
    return lo, hi


def check_design_ranges(args: argparse.Namespace) -> None:
    """A nuisance domain that holds no null law is refused before any estimate, naming the range
    at fault: a true difference of -margin needs discordance >= margin (``--discordance 0,0``
    was blamed on --margin after the estimate)."""
    method, looks = getattr(args, "method", None), getattr(args, "looks", None)
    if isinstance(method, str):   # from the catalogue: was refused after the studies loaded, naming --method
        from methods import info

        kind = info(method).kind
        if kind == "fixed" and looks is not None:
            raise UsageError(f"--looks {looks}: method {method!r} is fixed-sample: it takes no looks", "--looks")
        if kind == "sequential" and looks is None:
            raise UsageError(f"--looks: method {method!r} is sequential: give its number of looks", "--looks")
    lo, hi = args.discordance
    if hi < args.margin:
        raise UsageError(f"--discordance {lo:g},{hi:g} lies below the margin {args.margin:g}: a null law (true "
                         "difference -margin) needs discordance >= margin", "--discordance")


def add_design_arguments(p, sequential: bool = True) -> None:
    """The design a certificate or calibration is for: K, M, margin, rho_max (and looks), and
    the nuisance ranges it is taken over."""
    p.add_argument("--method", required=True, help="registered method name (or package.module:ATTR)")
    p.add_argument("--clusters", type=DESIGN_CLUSTERS, required=True, help="K, independent clusters (2 to 1,000,000)")
    p.add_argument("--trials", type=DESIGN_TRIALS, default=1,
                   help="M, trials (pairs) per cluster, at most 100,000 (default %(default)s)")
    p.add_argument("--margin", type=open_unit, required=True, help="non-inferiority margin, in (0, 1)")
    p.add_argument("--rho-max", type=unit_open_top, default=0.0,
                   help="largest intra-cluster correlation the nuisance domain includes (default 0)")
    if sequential:
        p.add_argument("--looks", type=positive_int, default=None,
                       help="equally spaced looks at ceil(jK/L) clusters (sequential methods)")
    p.add_argument("--baseline", type=range_pair, default=(0.5, 1.0), metavar="LO,HI",
                   help="baseline pass-rate range of the nuisance domain (default 0.5,1)")
    p.add_argument("--discordance", type=range_pair, default=(0.01, 0.5), metavar="LO,HI",
                   help="discordance range of the nuisance domain (default 0.01,0.5)")
    p.add_argument("--out", type=nonempty_path, default=None, metavar="DIR",
                   help="where the certificate is written (default: the records directory, where coverage looks: "
                        "$SIMLAB_RECORDS or the checkout's results/qualification)")
    p.add_argument("--sign-key", default=None, metavar="PEM", help="Ed25519 private key to sign the certificate")
    p.add_argument("--n-jobs", type=n_jobs, default=1, help="local worker processes, -1 = all cores (default 1)")
    add_max_seconds(p)
