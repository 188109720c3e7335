"""``repeated_fixed`` -- the seed's naive peeking rule: the nominal fixed-sample test at
level alpha at every look, promoting at the first look that passes.

Repeated significance testing inflates the type I error (Armitage, McPherson & Rowe 1969,
J R Stat Soc A 132:235-244): the seed's ten looks at 50, 100, ..., 500 trials with
the exact binomial test (alpha = 0.05, margin 0.03, true loss 0.03) promote 0.11077.

Default wrapped method: ``binomial_loss``; any registered fixed-sample method can be
wrapped with ``METHOD.with_inner(name)``.
"""
from methods.fixed.binomial_loss import METHOD as BINOMIAL_LOSS
from methods.sequential import _wrap
from methods.sequential.base import SequentialMethod

METHOD = SequentialMethod(
    name="repeated_fixed",
    version="1",
    estimand=BINOMIAL_LOSS.estimand,
    citation="cx_eval_lab evidence spine (seed chapter), Sequential Decisions Lab naive rule; "
             "Armitage, McPherson & Rowe (1969) J R Stat Soc A 132:235-244",
    summary="the wrapped fixed-sample method at the nominal level alpha at every look",
    evaluate=_wrap.make_evaluate(lambda alpha, L: alpha, lambda L: list(range(L))),
    inner=BINOMIAL_LOSS,
)
