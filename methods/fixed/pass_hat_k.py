"""``pass_hat_k`` -- non-inferiority of the candidate's pass^k (all k trials of a case pass).

tau-bench's reliability metric (Yao, Shinn, Razavi & Narasimhan 2024, "tau-bench: A
Benchmark for Tool-Agent-User Interaction in Real-World Domains", arXiv:2406.12045, sec. 3)
is pass^k, the chance that all of k independent trials of a case succeed.  With exactly k
trials per case and arm, each case gives one paired binary outcome -- (baseline passed all
k, candidate passed all k) -- and the cases of one customer share the customer's
heterogeneity.  This method's tables therefore count **cases**, not trial pairs, per cluster
in the usual order (n11, n10, n01, n00 over "all k passed"), and the estimand is the
case-weighted difference of pass^k rates, ``sum(n01 - n10) / sum(n)`` over those tables
(``Estimand.TRIAL`` with the case as the unit).  The evidence path builds these tables from
the raw trials when the manifest registers this method (``unit``); a study measures the
method on simulated case tables like any other (the cluster size is the number of cases
per cluster, the baseline rate the baseline's pass^k).

The interval is the clustered score interval of ``clustered_score`` applied to those tables
(Tango 1998, Stat Med 17:891-908, score statistic at the null-restricted MLE; ICC adjustment
for clustered matched pairs as in Yang, Sun & Hardin 2012, Comput Stat Data Anal
56:1301-1320): variance ``max(cluster-robust about delta, Tango's restricted variance)``, so a
sample without discordant cases still has a positive variance (no zero-variance pass).

``icc_floor`` (the least intra-cluster correlation of the case outcomes the variance
assumes) defaults to 0.1, not 0: pass^k designs put several cases on each customer, and a
certification study measured the floor-0 rule above the level there -- at 40 customers x 3
cases, margin 0.1, rho up to 0.1 (baseline 0.5-0.95, discordance 0.05-0.5) its worst
false-pass rate was 0.0365 (2000 replications, Clopper-Pearson lower bound 0.0277 > the
0.0275 threshold), and 0.0385 at 200 customers; with the floor at 0.1 the same
certifications qualify (worst 0.019 and 0.023).  Boundaries as in ``clustered_score``: no
cases -> inconclusive; every case a loss -> lower bound -1, fail; one cluster -> the model
term keeps the variance positive."""
from dataclasses import dataclass

from methods.fixed import clustered_score
from methods.protocol import Estimand, FixedMethod


@dataclass(frozen=True, kw_only=True)
class CaseReliabilityMethod(FixedMethod):
    """A fixed-sample method whose tables count cases by "all k trials passed" in each arm."""
    unit: str = "case_all_trials"


METHOD = CaseReliabilityMethod(
    name="pass_hat_k",
    version="1",
    estimand=Estimand.TRIAL,
    citation="pass^k: Yao, Shinn, Razavi & Narasimhan (2024) arXiv:2406.12045 (tau-bench), sec. 3; interval: "
             "Tango (1998) Stat Med 17:891-908 score interval with the ICC adjustment of Yang, Sun & Hardin (2012) "
             "Comput Stat Data Anal 56:1301-1320, on per-cluster tables of cases by all-k-passed",
    summary="pass^k difference (cases where all k trials pass), clustered score interval over per-customer "
            "case tables",
    kernel=clustered_score.kernel,
    prepare=clustered_score.prepare,
    options={"icc_floor": 0.1},
)
