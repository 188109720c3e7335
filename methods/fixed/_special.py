"""Numba special functions for the kernels of the resampling and Bayesian methods: the
standard normal law (scipy.special's ``ndtr`` and ``ndtri``) and the regularised incomplete
beta function with ``log B`` (``betainc``, ``betaln``), tested against scipy
(``tests/methods/test_methods_resample.py``, ``tests/methods/test_methods_bayes.py``)."""
import math

import numba as nb

# --------------------------------------------------------------------------- normal law

_SQRT2 = math.sqrt(2.0)
SQRT2PI = math.sqrt(2.0 * math.pi)


@nb.njit(inline="always", cache=True)
def norm_cdf(x):
    return 0.5 * math.erfc(-x / _SQRT2)


@nb.njit(cache=True)
def norm_ppf(p):
    """Standard normal quantile: Acklam's rational approximation (relative error
    1.15e-9) refined by one Halley step on ``erfc``, to about 1e-15."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    sign = 1.0
    if p > 0.5:                        # by symmetry; 1 - p is exact for p >= 1/2 (Sterbenz)
        p = 1.0 - p
        sign = -1.0
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        x = ((((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q
                - 2.549732539343734e+00) * q + 4.374664141464968e+00) * q + 2.938163982698783e+00)
             / ((((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q
                 + 3.754408661907416e+00) * q + 1.0))
    else:
        q = p - 0.5
        r = q * q
        x = ((((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r
                + 1.383577518672690e+02) * r - 3.066479806614716e+01) * r + 2.506628277459239e+00) * q
             / (((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r
                  + 6.680131188771972e+01) * r - 1.328068155288572e+01) * r + 1.0))
    e = 0.5 * math.erfc(-x / _SQRT2) - p
    u = e * SQRT2PI * math.exp(0.5 * x * x)
    return sign * (x - u / (1.0 + 0.5 * x * u))


# --------------------------------------------------------------------------- incomplete beta

_FPMIN = 1e-300
_CF_EPS = 4e-16


@nb.njit(cache=True)
def betacf(a, b, x):
    """Continued fraction of I_x(a, b) (Numerical Recipes 3rd ed. sec. 6.4, modified Lentz)."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _FPMIN:
        d = _FPMIN
    d = 1.0 / d
    h = d
    for m in range(1, 100000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _FPMIN:
            d = _FPMIN
        c = 1.0 + aa / c
        if abs(c) < _FPMIN:
            c = _FPMIN
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _FPMIN:
            d = _FPMIN
        c = 1.0 + aa / c
        if abs(c) < _FPMIN:
            c = _FPMIN
        d = 1.0 / d
        de = d * c
        h *= de
        if abs(de - 1.0) < _CF_EPS:
            break
    return h


@nb.njit(cache=True)
def betainc_logs(a, b, x, lx, l1x, lbeta_ab):
    """I_x(a, b) given ``lx = log x``, ``l1x = log(1 - x)`` and ``lbeta_ab = log B(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(a * lx + b * l1x - lbeta_ab)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * betacf(a, b, x) / a
    return 1.0 - front * betacf(b, a, 1.0 - x) / b


@nb.njit(cache=True)
def betainc(a, b, x, lbeta_ab):
    """Regularised incomplete beta I_x(a, b); ``lbeta_ab = log B(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return betainc_logs(a, b, x, math.log(x), math.log1p(-x), lbeta_ab)


@nb.njit(inline="always", cache=True)
def lbeta(a, b):
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
