"""``bonferroni`` -- the wrapped fixed-sample method at level alpha / L at each of the L
looks; the union bound P(any look falsely promotes) <= sum of per-look levels = alpha
(Bonferroni 1936; as a group-sequential baseline see Jennison & Turnbull 2000,
*Group Sequential Methods with Applications to Clinical Trials*, sec. 2.1).

Seed: ten looks at 50, ..., 500, exact binomial test at 0.005 per look, true loss 0.03
-> P(promote) = 0.00849.  Default wrapped method: ``binomial_loss``.
"""
from methods.fixed.binomial_loss import METHOD as BINOMIAL_LOSS
from methods.sequential import _wrap
from methods.sequential.base import SequentialMethod

METHOD = SequentialMethod(
    name="bonferroni",
    version="1",
    estimand=BINOMIAL_LOSS.estimand,
    citation="Bonferroni (1936); Jennison & Turnbull (2000) Group Sequential Methods, sec. 2.1; "
             "cx_eval_lab evidence spine (seed chapter), Sequential Decisions Lab",
    summary="the wrapped fixed-sample method at alpha / L at every one of the L looks",
    evaluate=_wrap.make_evaluate(lambda alpha, L: alpha / L, lambda L: list(range(L))),
    inner=BINOMIAL_LOSS,
)
