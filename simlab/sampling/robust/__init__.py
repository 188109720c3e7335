"""Laws of paired cluster tables outside the Dirichlet-multinomial (DM) family, at the null boundary.

A model-certified claim bounds the false-pass rate over the DM cluster model
(``simlab.scenario``).  The evidence path can check the design and estimate the ICC, but it
cannot rule out laws outside that family; these are laws to measure a claim under:

* :class:`LogitNormalLaw` -- logit-normal random effects: a cluster effect shared by both
  arms, optionally a candidate-only cluster effect and a case (trial-pair) effect;
* :class:`DirichletLaw` -- the DM model itself with **random cluster sizes** (Poisson or
  geometric, the existing trial-level generator), and its fixed-size reference rows;
* :class:`DiscordanceLaw` -- gamma heterogeneity of the discordance per cluster and/or per case;
* :class:`DirectionLaw` -- a direction mixture: some customers favour the candidate, some the baseline.

Each law is a validated, frozen pydantic model whose ``key`` is its content hash; each
states its population pair cells, its trial-weighted difference (``-margin``) and the ICC
of ``D = n01 - n10`` it implies (``icc_d``).  ``law.source(seed)`` is a
``simlab.sampling.TableSource``: numba kernels over counter-based uniforms
(``simlab.rng``), so replication ``r`` is a pure function of ``(seed, law, r)`` -- the same
tables for any chunking or worker count.  :data:`Law` is the discriminated union (field
``kind``) that reads any of them back from JSON (:func:`parse_law`).
"""
from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter

from .base import RobustLaw, RobustSource, realised_moments
from .direction import DirectionLaw, DirectionSource
from .dirichlet import DirichletLaw
from .discordance import DiscordanceLaw, DiscordanceSource, capped_gamma
from .logit_normal import LogitNormalLaw, LogitNormalSource, mean_expit, solve_intercept

Law = Annotated[Union[LogitNormalLaw, DirichletLaw, DiscordanceLaw, DirectionLaw], Field(discriminator="kind")]
LAW_KINDS = ("logit_normal", "dirichlet_multinomial", "gamma_discordance", "direction_mixture")


def parse_law(data: Any) -> RobustLaw:
    """A law from its JSON form (a dict with ``kind``); a pydantic error names the field."""
    return TypeAdapter(Law).validate_python(data)


__all__ = ["DirectionLaw", "DirectionSource", "DirichletLaw", "DiscordanceLaw", "DiscordanceSource", "LAW_KINDS",
           "Law", "LogitNormalLaw", "LogitNormalSource", "RobustLaw", "RobustSource", "capped_gamma", "mean_expit",
           "parse_law", "realised_moments", "solve_intercept"]
