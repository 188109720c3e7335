"""Reference numbers the tests check, typed once (the headline numbers of the evidence-spine
chapter of cx_eval_lab this project grew from).  All are exact.

* The seed's fixed-sample design: 30 independent customers, the baseline always passes,
  the candidate loses with probability 0.04, margin 0.03, one-sided alpha 0.025.  The
  clustered normal interval passes whenever no loss is observed (zero estimated variance):
  P(pass) = 0.96^30.
* The seed's sequential design: Bernoulli loss, null p >= 0.03, looks at 50, 100, ..., 500
  trials, alpha 0.05, true loss 0.03: the probability each rule promotes (5 decimals).
"""

SEED_CLUSTERS = 30
SEED_LOSS = 0.04
SEED_MARGIN = 0.03
SEED_ALPHA = 0.025
SEED_FALSE_PASS = 0.96 ** 30
SEED_FALSE_PASS_5DP = 0.29386

SEQUENTIAL_SEED_LOOKS = tuple(range(50, 501, 50))
SEQUENTIAL_SEED_ALPHA = 0.05
SEQUENTIAL_SEED_PROMOTION_5DP = {"repeated_fixed": 0.11077, "likelihood_ratio": 0.02396,
                                 "bonferroni": 0.00849, "fixed_final": 0.03541}
