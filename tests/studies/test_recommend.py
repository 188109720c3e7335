"""`simlab recommend` (issue 11.4): covered methods at a design, their record worst case,
power at the alternative (exact where an engine applies), ranked by power, the top ones
sized; library and CLI, against records qualified here on a small domain."""
from __future__ import annotations

import json
import math

import pytest

from methods import registry
from methods.qualification import Axis, IntAxis, QualificationDomain, QualificationPolicy, load_record
from simlab.cli import main
from simlab.scenario import FixedSize, PairedScenario
from studies.exact.fixed import exact_measures
from studies.qualify.run import qualify
from studies.recommend import recommend

QUALIFIED_HERE = ("tango_score", "clustered_normal", "paired_wald")


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Records over K in {10, 30}, 3 trials per cluster, rho in {0, 0.1}, margin 0.1; a
    generous threshold (2 alpha) so that 2000 replications can qualify cells."""
    out = tmp_path_factory.mktemp("records")
    dom = QualificationDomain(clusters=IntAxis(lo=10, hi=30, grid=(10, 30)), cluster_sizes=(FixedSize(trials=3),),
                              rho=Axis(lo=0.0, hi=0.1, grid=(0.0, 0.1)), margin=Axis(lo=0.1, hi=0.1, grid=(0.1,)),
                              baseline=Axis(lo=0.9, hi=1.0, grid=(0.9, 1.0)),
                              discordance=Axis(lo=0.1, hi=0.2, grid=(0.1, 0.2)))
    pol = QualificationPolicy(domain=dom, min_replications=500, max_replications=2000, allowed_excess=2.0,
                              refine_evaluations=0)
    qualify([registry.get(n) for n in QUALIFIED_HERE], pol, out_dir=out)
    return out


def test_recommend_ranks_covered_methods_by_power(records):
    # rho_max 0 is a grid value; a design with rho anywhere in (0, 0.1] is not (no interpolation)
    p = recommend(clusters=30, trials=3, margin=0.1, rho_max=0.0, difference=0.0, discordance=0.2,
                  methods=list(QUALIFIED_HERE) + ["bonett_price"], top=1, directory=records, size_reps=8000)
    ranked, rest = p["ranked"], p["not_covered"]
    assert {r["method"] for r in ranked} | {r["method"] for r in rest} == set(QUALIFIED_HERE) | {"bonett_price"}
    # no record covers bonett_price: certified on demand at this design, where it exceeds the level
    assert any(r["method"] == "bonett_price" and r["made"] == "certified now" and "verdict exceeds" in r["coverage"]
               for r in rest)
    assert ranked, "at least one method is covered at an on-grid design"
    powers = [r["power"]["value"] for r in ranked]
    assert powers == sorted(powers, reverse=True) and [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
    alt = PairedScenario.from_rates(0.9, 0.0, 0.2, clusters=30, cluster_size=FixedSize(trials=3), rho=0.0)
    for r in ranked:
        m = registry.get(r["method"])
        if r["power"]["exact"]:  # exact: equal to the exact engine's pass rate
            assert r["power"]["value"] == pytest.approx(exact_measures(alt, m, 0.1, 0.025).pass_rate, abs=1e-12)
        rec = load_record(records / r["record"])
        fp = r["false_pass"]
        cells = [c for c in rec.cells if c.clusters == 30 and c.rho == 0.0]
        assert fp["upper"] == max(c.upper for c in cells) and fp["threshold"] == rec.threshold
        assert fp["upper"] <= rec.threshold  # covered means every consulted cell qualified
    assert all(r["power"]["exact"] for r in ranked)  # every method here has a cheap exact engine at K=30, M=3
    top = ranked[0]["size"]
    assert "clusters" in top and top["power_bound"] >= 0.8 and top["false_pass_checked"] is False
    assert all("size" not in r for r in ranked[1:])
    json.dumps(p)


def test_recommend_reports_uncovered_designs_and_bad_input(records):
    # off the record's grid (between K = 10 and 30, or beyond it): not covered, no interpolation
    for k in (20, 300):
        said = []
        p = recommend(clusters=k, trials=3, margin=0.1, rho_max=0.1, methods=["tango_score"], top=0,
                      directory=records, progress=said.append)
        assert not p["ranked"] and "grid" in p["not_covered"][0]["coverage"]
        # the coverage checks (record verification: the slow first part) report progress per method
        assert said[:2] == ["checking the qualification files of 1 methods at this design (each is verified)",
                            "1/1 tango_score: not covered"]
    with pytest.raises(ValueError, match="rho must lie in"):
        recommend(clusters=30, trials=3, margin=0.1, rho_max=0.1, rho=0.2, directory=records)
    with pytest.raises(ValueError, match="clusters"):
        recommend(clusters=1, trials=3, margin=0.1, rho_max=0.1, directory=records)


def test_recommend_command(records, capsys):
    args = ["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.1", "--rho-max", "0.1",
            "--discordance", "0.2", "--top", "0", "--directory", str(records), "--max-seconds", "20"]
    assert main(args + ["--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["design"]["clusters"] == 30 and p["alternative"]["target_power"] == 0.8
    # ranked: the methods qualified here, and any the command certified or calibrated at this design
    # or that a theorem covers; each says which
    for r in p["ranked"]:
        assert r["method"] in QUALIFIED_HERE or r["made"] in ("certified now", "calibrated now") \
            or r["guarantee"] == "theorem", r
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "ranked by power" in out
    assert main(["recommend", "--clusters", "30", "--trials", "3", "--margin", "0.1", "--rho-max", "1.5",
                 "--json"]) == 2
    assert "[0, 1)" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_recommend_uses_a_certificate_at_exactly_the_design(tmp_path):
    """A certificate (studies.qualify.certify) covers exactly its design: recommend reports its worst
    point and engine; one cluster more is not covered by it."""
    from studies.qualify.certify import certify, write_certificate

    cert = certify("exact_discordant", 40, 1, 0.1, 0.0)
    assert cert.verdict == "qualified"
    write_certificate(cert, tmp_path)
    p = recommend(clusters=40, trials=1, margin=0.1, rho_max=0.0, discordance=0.2, methods=["exact_discordant"],
                  top=0, directory=tmp_path)
    (row,) = p["ranked"]
    fp = row["false_pass"]
    assert fp["engine"] == "exact-discordant" and fp["upper"] == cert.worst_point.upper
    assert fp["proven_upper"] == cert.proven_upper and row["power"]["exact"]
    p = recommend(clusters=41, trials=1, margin=0.1, rho_max=0.0, methods=["exact_discordant"], top=0,
                  directory=tmp_path)
    assert not p["ranked"]


@pytest.mark.parametrize("rho_max", [0.1, 0.2])
def test_recommend_ranks_the_calibrated_dm_score_it_certified(tmp_path, rho_max):
    """The calibrated row is the certified method itself (its options), so its power is that
    method's exact power; at rho_max 0.1 the registered name finds it, at 0.2 no name does."""
    from studies.exact.convolution import ConvolutionStates
    from studies.qualify.calibrate import calibrate

    p = recommend(clusters=30, trials=3, margin=0.03, rho_max=rho_max, difference=0.0, discordance=0.1,
                  methods=["tango_score"], calibrate=("dm_score",), directory=tmp_path, top=0)
    (row,) = [r for r in p["ranked"] if r["base"] == "dm_score"]
    cal = calibrate("dm_score", 30, 3, 0.03, rho_max)
    assert row["method"] == cal.method.label and row["made"] == "calibrated now"
    want = float(ConvolutionStates(cal.method, 30, 3, 0.03, 0.025).pass_probability(0.05, 0.05, rho_max))
    pw = row["power"]                    # simulated: within 4 MC SE of the exact power of the certified method
    assert not pw["exact"] and abs(pw["value"] - want) <= 4 * math.sqrt(want * (1 - want) / pw["n_reps"])
    name = row["statistical_method"]
    if rho_max == 0.1:
        assert registry.get(name).identity == cal.method.identity
    else:
        assert name is None and registry.get(cal.method.label).identity != cal.method.identity


def test_a_certificate_estimated_over_the_budget_is_not_started(records, tmp_path, monkeypatch):
    """On-demand certification is estimated first: a certificate whose estimated cost does
    not fit in what is left of the budget is listed as skipped, with the estimate and the
    command to run, and nothing is certified or written."""
    from studies.engine.cost import TimeEstimate
    from studies.qualify import estimate

    asked = []

    def costly(method, *args, **kw):
        asked.append(method.name)
        return TimeEstimate(3600.0, 7200.0, 1)

    monkeypatch.setattr(estimate, "certify_estimate", costly)
    p = recommend(clusters=37, trials=3, margin=0.1, rho_max=0.0, difference=0.0, discordance=0.2,
                  methods=["paired_wald"], calibrate=(), top=0, directory=records, certify_dir=tmp_path,
                  max_seconds=60.0)
    assert asked == ["paired_wald"]
    skipped = [s for s in p["skipped"] if s["method"] == "paired_wald" and s["what"] == "certificate"]
    assert len(skipped) == 1, p["skipped"]
    assert "estimated 60 min to 2.0 h" in skipped[0]["why"], skipped[0]["why"]
    assert "simlab certify --method paired_wald --clusters 37" in skipped[0]["why"]
    assert not list(tmp_path.iterdir())


def test_a_certificate_made_on_demand_is_found_by_the_next_run(records, tmp_path):
    """The second recommendation at a design reads the certificate the first one made (of
    the current code, at exactly this design) instead of certifying the method again."""
    args = dict(clusters=37, trials=3, margin=0.1, rho_max=0.0, difference=0.0, discordance=0.2,
                methods=["paired_wald"], calibrate=(), top=0, directory=records, certify_dir=tmp_path)
    first = recommend(**args)
    made = sorted(tmp_path.iterdir())
    assert len(made) == 1
    second = recommend(**args)
    assert sorted(tmp_path.iterdir()) == made
    rows = [[r for r in p["ranked"] + p["not_covered"] if r["base"] == "paired_wald"][0] for p in (first, second)]
    assert rows[0]["made"] == "certified now" and rows[1]["made"] == "certified earlier"
    assert rows[0]["covered"] == rows[1]["covered"] and rows[1]["coverage"] in rows[0]["coverage"]


# ---------------------------------------------------------------- the sizing kept within the budget
SIZED = dict(clusters=30, trials=3, margin=0.1, rho_max=0.0, difference=0.0, discordance=0.2, methods=["tango_score"],
             calibrate=(), certify_missing=False, top=1, size_reps=8000)


class _Clock:
    """A clock that moves only when a sizing step is charged to it: a step costs ``per_unit``
    seconds per cluster-replication analysed (so later steps cost many times the first, as
    in the search measured at 100 x 3: 1.6, 9, 3.6 and 29 s)."""

    def __init__(self, per_unit: float):
        self.now, self.per_unit, self.steps = 1000.0, per_unit, []

    def perf_counter(self) -> float:
        return self.now

    def charge(self, frame, ks, n_reps) -> None:
        units = sum(k * max(0, n_reps - frame.counts.get(k, [0, 0])[0]) for k in {int(k) for k in ks})
        self.steps.append(units * self.per_unit)
        self.now += units * self.per_unit


def _charged(monkeypatch, clock: _Clock) -> None:
    """Every power evaluation of a sizing search charged to ``clock``, which is the clock
    the recommendation keeps its budget on."""
    import importlib
    import types

    from studies.engine.frame import PowerFrame

    rec = importlib.import_module("studies.recommend")
    sizing = importlib.import_module("studies.sizing.size")

    real, real_pilot = PowerFrame.evaluate, sizing.frame_seconds
    piloting = [False]

    def frame_seconds(*args, **kwargs):   # the estimate's pilot is not a step of the search (not charged)
        piloting[0] = True
        try:
            return real_pilot(*args, **kwargs)
        finally:
            piloting[0] = False

    def evaluate(self, ks, n_reps):
        if not piloting[0]:
            clock.charge(self, ks, n_reps)
        real(self, ks, n_reps)

    monkeypatch.setattr(PowerFrame, "evaluate", evaluate)
    monkeypatch.setattr(sizing, "frame_seconds", frame_seconds)
    monkeypatch.setattr(rec, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))


def test_a_sizing_search_that_would_overrun_the_budget_stops_within_it(records, tmp_path, monkeypatch):
    """The sizing search's first step is cheap and its later steps cost many times it: the
    recommendation prices each step from those measured before it, runs it in slices checked
    against the clock, and stops the search within the budget, saying what it found."""
    import shutil

    for f in records.iterdir():   # the grid records only (other tests certify into the shared folder)
        if not f.name.endswith(".cert.json"):
            shutil.copy(f, tmp_path)
    records = tmp_path
    total = _Clock(1.0)
    _charged(monkeypatch, total)
    done = recommend(**SIZED, directory=records, max_seconds=1e12)
    assert done["ranked"][0]["size"]["clusters"] >= 2         # with time enough the search completes
    # the whole search would take 1.5x the budget, the first step about 30% of it
    clock = _Clock(1.5 * 60.0 / sum(total.steps))
    _charged(monkeypatch, clock)
    said = []
    p = recommend(**SIZED, directory=records, max_seconds=60.0, progress=said.append)
    assert p["seconds"] <= 60.0, (p["seconds"], clock.steps)
    (row,) = p["ranked"]
    assert "clusters" not in (row.get("size") or {})
    (stop,) = [s for s in p["skipped"] if s["what"] == "sizing"]
    assert stop["why"].startswith("stopped within the 60 s budget: ")
    # the command that finishes it sizes the same alternative, runnable as printed (probe round 6)
    assert stop["command"] == ("simlab size --method tango_score --margin 0.1 --true-difference 0.0 --power 0.8 "
                               "--alpha 0.025 --trials-per-cluster 3 --baseline 0.9 --discordance 0.2 --rho 0.0 "
                               "--rho-max 0.0 --seed 20261129")
    assert stop["why"].endswith(f"; run: {stop['command']}")
    found = stop["bracket"]                                   # what the search had found: a bracket of K
    k = found.get("answer", found.get("reaches"))
    assert k and found["below"] < k and found["n_reps"] == 2000 and found["power_bound"] >= 0.8, stop
    assert f"so far {'K=' if 'answer' in found else 'the power bound reaches the target from K='}{k}" in stop["why"]
    assert any(m.startswith("frame K=") for m in said), said   # the search's progress is still reported
    assert any(m.startswith("tango_score: sizing stopped: ") for m in said)
    json.dumps(p)


def test_a_search_in_budgeted_slices_finds_what_one_pass_finds():
    """Slicing a step changes no count (every table is a pure function of seed, scenario and
    replication): a search run in slices of 20 replications answers what it answers in one
    pass, step for step."""
    from studies.sizing.size import StepBudget, size

    args = dict(margin=0.1, difference=0.0, discordance=0.2, trials=3, rho=0.0, initial_reps=500, max_reps=2000,
                check_false_pass=False)
    m = registry.get("tango_score")
    whole = size(m, **args)
    sliced = size(m, **args, budget=StepBudget(1e9, slice_seconds=0.0, first_slice=20))
    assert sliced.clusters == whole.clusters and sliced.power_at_k == whole.power_at_k
    assert sliced.search_log == whole.search_log


def test_the_exact_powers_of_a_stretch_are_kept_within_the_budget_too(records, tmp_path, monkeypatch):
    """A verified stretch computes up to 17 exact powers (at 900 x 3 each took 0.3 s to find
    that no engine applies): they are priced at what the previous one took, like the steps."""
    import importlib
    import shutil

    for f in records.iterdir():
        if not f.name.endswith(".cert.json"):
            shutil.copy(f, tmp_path)
    clock = _Clock(0.0)                                        # the power evaluations cost nothing here
    _charged(monkeypatch, clock)
    size_module = importlib.import_module("studies.sizing.size")
    calls = []

    def slow_exact(*args, **kw):
        calls.append(args[1].clusters)
        clock.now += 10.0
        return None

    monkeypatch.setattr(size_module, "exact_pass_rate", slow_exact)
    said = []
    p = recommend(**SIZED, directory=tmp_path, max_seconds=60.0, progress=said.append)
    assert p["seconds"] <= 60.0 and 1 <= len(calls) <= 5, (p["seconds"], calls)
    (stop,) = [s for s in p["skipped"] if s["what"] == "sizing"]
    assert "the exact power at K=" in stop["why"] and stop["bracket"], stop


def test_a_complete_answer_is_kept_when_the_budget_runs_out_while_it_is_reported(records, tmp_path, monkeypatch):
    """Once the search has its answer, what is left is reporting (the power curve, the power
    at K - 1): a budget spent then cuts those, not the answer."""
    import shutil

    for f in records.iterdir():
        if not f.name.endswith(".cert.json"):
            shutil.copy(f, tmp_path)
    clock = _Clock(0.0)
    _charged(monkeypatch, clock)
    ample = recommend(**SIZED, directory=tmp_path, max_seconds=60.0)
    k = ample["ranked"][0]["size"]["clusters"]

    def progress(msg: str) -> None:   # the budget is spent the moment the answer is found
        if msg.startswith(f"K={k}: power bound"):
            clock.now += 60.0

    p = recommend(**SIZED, directory=tmp_path, max_seconds=60.0, progress=progress)
    assert p["ranked"][0]["size"] == ample["ranked"][0]["size"]
    assert not [s for s in p["skipped"] if s["what"] == "sizing"]


def _certificate_skip(records, tmp_path, monkeypatch, low: float, high: float) -> dict:
    """The one on-demand certificate's skip entry when paired_wald's certificate is estimated at
    ``low`` to ``high`` seconds, on a clock that stands still, in a 60 s budget (nothing written)."""
    import importlib
    import types

    from studies.engine.cost import TimeEstimate
    from studies.qualify import estimate

    monkeypatch.setattr(importlib.import_module("studies.recommend"), "time",
                        types.SimpleNamespace(perf_counter=_Clock(0.0).perf_counter))
    monkeypatch.setattr(estimate, "certify_estimate", lambda *a, **kw: TimeEstimate(low, high, 1))
    p = recommend(clusters=37, trials=3, margin=0.1, rho_max=0.0, difference=0.0, discordance=0.2,
                  methods=["paired_wald"], calibrate=(), top=0, directory=records, certify_dir=tmp_path,
                  max_seconds=60.0)
    (skip,) = [s for s in p["skipped"] if s["what"] == "certificate"]
    assert not list(tmp_path.iterdir())
    return skip


def test_a_certificate_is_started_only_when_it_fits_beside_the_reserve_for_the_report(records, tmp_path,
                                                                                      monkeypatch):
    """An on-demand certificate whose certain cost fits in what is left, but not beside the
    part of the budget kept for the powers, the report and the process's start-up and exit,
    is not started."""
    skip = _certificate_skip(records, tmp_path, monkeypatch, 58.0, 58.0)
    assert "estimated about 58 s, over the 55 s left of the 60 s budget" in skip["why"], skip


def test_a_certificate_whose_largest_estimate_does_not_fit_is_not_started(records, tmp_path, monkeypatch):
    """A certificate cannot be stopped part-way, so one whose smallest estimate fits but whose
    largest does not (bayes_paired at 100 x 3: 30 s to 60 s) is not started in a 60 s budget: a
    first run once took 68 s by starting it on its smallest estimate."""
    skip = _certificate_skip(records, tmp_path, monkeypatch, 10.0, 70.0)
    assert "over the 55 s left of the 60 s budget" in skip["why"], skip


def test_a_reference_power_is_priced_by_a_pilot_that_changes_no_figure():
    """An uncovered method's power (shown for reference) is priced from a timed pilot before the
    rest is simulated: when the rest does not fit it is named, not run; when it fits, the figure
    is the one computed without a pilot (the frame keeps the pilot's replications)."""
    from importlib import import_module

    from methods.registry import get

    rec = import_module("studies.recommend")       # the module (the package exports the function)

    sc = PairedScenario.from_rates(0.8, 0.05, 0.2, clusters=40, cluster_size=FixedSize(trials=3), rho=0.1)
    m = get("betting_ci_horizon")                     # no exact engine: simulated
    plain = rec._power(m, sc, 0.03, 0.025, 600, 7)
    assert 0.05 < plain["value"] < 0.95               # a figure a changed frame would change
    asked = []
    priced = rec._power(m, sc, 0.03, 0.025, 600, 7, lambda s, what: asked.append((s, what)))
    assert priced == plain and not plain["exact"] and len(asked) == 1 and asked[0][0] >= 0.0
    assert "600 tables" in asked[0][1]
    refused = rec._power(m, sc, 0.03, 0.025, 600, 7, lambda s, what: f"{what}, over budget")
    assert list(refused) == ["not_run"] and refused["not_run"].startswith("its power on 600 tables takes an estimated")
    assert refused["not_run"].endswith("s more, over budget")


def test_a_ranked_power_is_cut_to_the_budget_it_is_given_and_says_on_how_many_tables():
    """A covered method's power is always given (the ranking needs it): with no room left it is
    the pilot's replications' figure, the same as a plain run on that many tables, and its
    standard error is that of the tables used; with room for all, it is the plain figure."""
    from importlib import import_module

    from methods.registry import get

    rec = import_module("studies.recommend")
    sc = PairedScenario.from_rates(0.8, 0.05, 0.2, clusters=40, cluster_size=FixedSize(trials=3), rho=0.1)
    m = get("betting_ci_horizon")
    cut = rec._power(m, sc, 0.03, 0.025, 600, 7, room=lambda: 0.0)
    assert 1 < cut["n_reps"] <= rec.PILOT_REPS < 600
    plain = rec._power(m, sc, 0.03, 0.025, cut["n_reps"], 7)
    assert cut == plain
    p = cut["value"]
    assert cut["mc_se"] == pytest.approx(math.sqrt(p * (1 - p) / cut["n_reps"]))
    assert rec._power(m, sc, 0.03, 0.025, 600, 7, room=lambda: 1e9) == rec._power(m, sc, 0.03, 0.025, 600, 7)
