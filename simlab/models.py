"""The one frozen pydantic base every boundary model of simlab derives from.

Boundary objects (scenarios, specs, policies, records, manifests) are immutable, reject
unknown fields (a typo is an error, never a silent default) and reject NaN/inf."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
