"""Globally adaptive Gauss-Kronrod (7, 15) quadrature in numba: the integrator of the
Dirichlet-difference tail probabilities (``_dirichlet_mixture``, ``_hier_quadrature`` and the
frozen version 1 in ``methods.reference.hierarchical_v1``).

Nodes and weights are QUADPACK's QK15 (Piessens, de Doncker-Kapenga, Ueberhuber & Kahaner
1983, *QUADPACK*, Springer, routine QK15); the strategy is QAG's: keep a list of panels,
bisect the one with the largest error estimate ``|K15 - G7|`` until the summed estimate is
below ``max(EPSABS, EPSREL * |value|)`` or ``LIMIT`` panels exist.  ``|K15 - G7|`` is the
error of the 7-point rule, so it bounds the error of the 15-point value generously on
smooth integrands.

The integrand is a numba function ``panel(nodes, args, f, g)`` that fills ``f[k]`` and
``g[k]`` at the 15 nodes of one panel at once (so it can share work between them, e.g. one
vectorised polynomial evaluation): ``f`` is the integrand whose error is controlled, ``g`` a
companion integrated by the same Kronrod rule (the density beside a tail probability).
:func:`adaptive` builds the driver for one such integrand (a closure: numba caches it, where
a function passed as an argument would be compiled afresh in every process).
"""
import numba as nb
import numpy as np
from simlab.numba_cache import cache_closure

# Gauss-Kronrod (7, 15) abscissae (XGK[7] = 0 the centre) and weights, QUADPACK qk15.
XGK = np.array([0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                0.207784955007898467600689403773245, 0.000000000000000000000000000000000])
WGK = np.array([0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                0.204432940075298892414161999234649, 0.209482141084727828012999174891714])
# Gauss 7-point weights of the nodes XGK[1], XGK[3], XGK[5] and of the centre
WG = np.array([0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
               0.381830050505118944950369775488975, 0.417959183673469387755102040816327])
LIMIT = 200        # panels at most
EPSABS = 1e-11
EPSREL = 1e-10
NODES = 15
# the node pairs in the order a panel lists them: the Gauss nodes (1, 3, 5) first
PAIR_ORDER = (1, 3, 5, 0, 2, 4, 6)


@nb.njit(cache=True)
def panel_nodes(a, b, nodes):
    """``nodes[0]`` = the centre of [a, b], then ``nodes[1 + 2i]``, ``nodes[2 + 2i]`` =
    centre -+ half-length * XGK[PAIR_ORDER[i]]."""
    centr = 0.5 * (a + b)
    hlgth = 0.5 * (b - a)
    nodes[0] = centr
    for i in range(7):
        absc = hlgth * XGK[PAIR_ORDER[i]]
        nodes[1 + 2 * i] = centr - absc
        nodes[2 + 2 * i] = centr + absc


@nb.njit(cache=True)
def kronrod_sums(a, b, f, g):
    """(K15 of f, |K15 - G7| of f, K15 of g) on [a, b] from the values at :func:`panel_nodes`."""
    hlgth = 0.5 * (b - a)
    resg = f[0] * WG[3]
    resk = f[0] * WGK[7]
    resd = g[0] * WGK[7]
    for i in range(7):
        j = PAIR_ORDER[i]
        f2 = f[1 + 2 * i] + f[2 + 2 * i]
        if i < 3:               # nodes 1, 3, 5 are also the Gauss (7-point) nodes
            resg += WG[i] * f2
        resk += WGK[j] * f2
        resd += WGK[j] * (g[1 + 2 * i] + g[2 + 2 * i])
    return resk * hlgth, abs((resk - resg) * hlgth), resd * hlgth


def adaptive(panel):
    """The numba driver ``integrate(args, brk, nbrk) -> (integral of f, integral of g)`` over
    ``[brk[0], brk[nbrk - 1]]``, starting from the panels between consecutive break points,
    for the integrand ``panel(nodes, args, f, g)`` (module docstring)."""

    @nb.njit(cache=True)
    def integrate(args, brk, nbrk):
        nodes = np.empty(NODES)
        f = np.empty(NODES)
        g = np.empty(NODES)
        ia = np.empty(LIMIT)
        ib = np.empty(LIMIT)
        ir = np.empty(LIMIT)
        ie = np.empty(LIMIT)
        idn = np.empty(LIMIT)
        n = 0
        for i in range(nbrk - 1):
            panel_nodes(brk[i], brk[i + 1], nodes)
            panel(nodes, args, f, g)
            ir[n], ie[n], idn[n] = kronrod_sums(brk[i], brk[i + 1], f, g)
            ia[n] = brk[i]
            ib[n] = brk[i + 1]
            n += 1
        tot = 0.0
        dtot = 0.0
        while True:
            tot = 0.0
            dtot = 0.0
            etot = 0.0
            imax = 0
            for i in range(n):
                tot += ir[i]
                dtot += idn[i]
                etot += ie[i]
                if ie[i] > ie[imax]:
                    imax = i
            if etot <= max(EPSABS, EPSREL * abs(tot)) or n >= LIMIT:
                break
            a0 = ia[imax]
            b0 = ib[imax]
            m0 = 0.5 * (a0 + b0)
            if m0 <= a0 or m0 >= b0:   # the panel cannot be split further
                ie[imax] = 0.0
                continue
            panel_nodes(a0, m0, nodes)
            panel(nodes, args, f, g)
            ir[imax], ie[imax], idn[imax] = kronrod_sums(a0, m0, f, g)
            panel_nodes(m0, b0, nodes)
            panel(nodes, args, f, g)
            ir[n], ie[n], idn[n] = kronrod_sums(m0, b0, f, g)
            ib[imax] = m0
            ia[n] = m0
            ib[n] = b0
            n += 1
        return tot, dtot

    return cache_closure(integrate)


__all__ = ["EPSABS", "EPSREL", "LIMIT", "NODES", "PAIR_ORDER", "WG", "WGK", "XGK", "adaptive", "kronrod_sums",
           "panel_nodes"]
