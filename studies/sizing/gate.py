"""The false-pass side of a sample-size answer (``studies.sizing.size``).

The answer K is accepted only with a ``qualified`` certificate at exactly that design
(``studies.qualify.certify.certify``: the worst case over baseline, discordance, rho up to
``rho_max`` and the label-noise models; exact and proven where its engine applies,
staged Monte Carlo bounds elsewhere).  The certify nuisance ranges, level, threshold and
replications come from the sizing policy (baseline and discordance ranges of its domain,
its label-noise models, ``alpha``, ``allowed_excess``, ``mc_confidence``, replications).

When the certificate at K says ``exceeds``, larger K are *proposed* by a cheap screen
(``studies.qualify.nuisance.design_false_pass(screen=True)`` on the policy's grid: doubling, then
bisection to the smallest K the screen finds qualified, at most ``cap``) and the proposal
is certified in turn; an ``undetermined`` certificate is refused.
"""
from __future__ import annotations

from typing import Any, Callable

from methods.qualification import QUALIFIED

from studies.qualify.nuisance import DesignFalsePass, design_false_pass


class NotQualifiedUpTo(ValueError):
    """The method's false-pass rate is not qualified at any K up to the cap: the method is at
    fault, not the design's nuisance ranges its worst case names (the CLI blamed --baseline)."""
    field = "--method"


class FalsePassGate:
    def __init__(self, method, *, trials: int, margin: float, rho_max: float, alpha: float, policy, seed: int,
                 looks: int | None, sampler: str, cap: int, log: list, say: Callable[[str], None], executor=None):
        self.method, self.trials, self.margin, self.rho_max = method, trials, margin, rho_max
        self.alpha, self.policy, self.seed, self.looks, self.sampler = alpha, policy, seed, looks, sampler
        self.cap, self.log, self.say, self.executor = cap, log, say, executor
        self.generated = 0
        self._worst = None

    def certificate(self, k: int):
        from studies.qualify.certify import certify

        dom, pol = self.policy.domain, self.policy
        cert = certify(self.method, k, self.trials, self.margin, self.rho_max, self.looks,
                       label_noise=tuple(dom.label_noise), baseline=(dom.baseline.lo, dom.baseline.hi),
                       discordance=(dom.discordance.lo, dom.discordance.hi), alpha=self.alpha,
                       allowed_excess=pol.allowed_excess, mc_confidence=pol.mc_confidence,
                       min_replications=pol.min_replications, max_replications=pol.max_replications, seed=self.seed,
                       executor=self.executor)
        self.log.append({"stage": "certify", "k": k, "verdict": cert.verdict, "engine": cert.engine,
                         "worst_upper": cert.worst_point.upper})
        self.say(f"certificate at K={k} ({cert.engine}): {cert.verdict}; worst case {cert_worst_text(cert)}")
        return cert

    def screen(self, k: int) -> DesignFalsePass:
        r = design_false_pass(self.method, clusters=k, trials=self.trials, margin=self.margin, rho_max=self.rho_max,
                              alpha=self.alpha, policy=self.policy, seed=self.seed, looks=self.looks,
                              sampler=self.sampler, screen=True, first=self._worst)
        self._worst = r.worst_point
        self.generated += r.replications_generated
        self.log.append({"stage": "screen", "k": k, "verdict": r.verdict, "worst": r.worst.rate})
        self.say(f"screen at K={k}: {r.verdict}; worst case {screen_worst_text(r)}")
        return r

    def raise_from(self, k: int) -> int:
        """Smallest K above ``k`` the screen finds qualified (doubling, then bisection)."""
        bad, good, at = k, None, None
        while good is None:
            if bad >= self.cap:
                raise NotQualifiedUpTo(f"refused: the false-pass rate over the nuisance domain is not qualified up to "
                                 f"K={self.cap} (the raise limit, or the cluster cap); worst case "
                                 f"{screen_worst_text(at) if at else 'see the certificate at K=' + str(k)}")
            nxt = min(2 * bad, self.cap)
            r = self.screen(nxt)
            if r.verdict == QUALIFIED:
                good = nxt
            else:
                bad, at = nxt, r
        while good - bad > 1:
            mid = (good + bad) // 2
            if self.screen(mid).verdict == QUALIFIED:
                good = mid
            else:
                bad = mid
        return good


def cert_worst_text(cert) -> str:
    w = cert.worst_point
    return (f"baseline {w.baseline:g}, discordance {w.discordance:g}, rho {w.rho:g} (true difference "
            f"{-cert.design.margin:g}): false-pass {w.rate:.4g}, bounds [{w.lower:.4g}, {w.upper:.4g}] vs threshold "
            f"{cert.threshold:.4g}")


def screen_worst_text(r: DesignFalsePass) -> str:
    w = r.worst
    return (f"baseline {w.baseline:g}, discordance {w.discordance:g}, rho {w.rho:g} (true difference "
            f"{w.difference:.4g}, loss rate {w.loss_rate:.4g}): false-pass {w.rate:.4g}, bounds "
            f"[{w.lower:.4g}, {w.upper:.4g}] vs threshold {r.threshold:.4g}")


def undetermined_text(cert) -> str:
    return (f"refused: at K={cert.design.clusters} the false-pass certificate over the nuisance domain is "
            f"undetermined (the replication cap could not decide it): {cert_worst_text(cert)}; more clusters would "
            "not settle Monte Carlo error -- raise the policy's max_replications")


def cert_payload(cert) -> dict[str, Any]:
    w = cert.worst_point
    d = cert.design
    return {"verdict": cert.verdict, "engine": cert.engine, "clusters": d.clusters, "trials": d.trials,
            "margin": d.margin, "rho_max": d.rho_max, "threshold": cert.threshold, "n_scenarios": len(cert.points),
            "rate": w.rate, "cp_upper": w.upper, "baseline": w.baseline, "discordance": w.discordance, "rho": w.rho,
            "n_reps": w.n_reps, "proven_upper": cert.proven_upper, "certificate_sha256": cert.certificate_sha256,
            "search": cert.search, "worst_case": cert_worst_text(cert)}


__all__ = ["FalsePassGate", "cert_payload", "cert_worst_text", "undetermined_text"]
