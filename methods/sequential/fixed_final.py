"""``fixed_final`` -- no interim looks: the wrapped fixed-sample method once, at the last look.

The registered schedule's earlier looks are recorded but never acted on, so the design is
the fixed-sample test at level alpha on ``looks[-1]`` clusters (the seed's "one final look":
exact binomial test at n = 500, alpha = 0.05, true loss 0.03 -> P(promote) = 0.03541).

Default wrapped method: ``binomial_loss`` (the seed's exact binomial test of the loss
rate); any registered fixed-sample method can be wrapped with ``METHOD.with_inner(name)``.

Source: cx_eval_lab evidence spine (seed chapter), "Sample size and sequential looks"
(``sequential_policy = fixed_sample_no_interim_looks``).
"""
from methods.fixed.binomial_loss import METHOD as BINOMIAL_LOSS
from methods.sequential import _wrap
from methods.sequential.base import SequentialMethod

METHOD = SequentialMethod(
    name="fixed_final",
    version="1",
    estimand=BINOMIAL_LOSS.estimand,
    citation="cx_eval_lab evidence spine (seed chapter), sequential_policy fixed_sample_no_interim_looks",
    summary="the wrapped fixed-sample method at level alpha on the last look only",
    evaluate=_wrap.make_evaluate(lambda alpha, L: alpha, lambda L: [L - 1]),
    inner=BINOMIAL_LOSS,
)
