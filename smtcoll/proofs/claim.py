"""A claim of impossibility: no schedule of a collective on a topology fits in a step and round budget."""

from __future__ import annotations

from typing import Any

import attrs

from smtcoll.errors import ModelError
from smtcoll.model import Collective, Topology


@attrs.frozen
class Claim:
    """"No schedule with at most `steps` steps and at most `rounds` rounds in total exists" for the
    collective as given (its chunk factor is the C of the instance). None leaves that side unbounded;
    at least one must be given. Bounding both by "at most" makes one certificate cover every smaller
    instance too (for example SCCL's (S=2, R=7) also rules out S=1)."""

    steps: int | None = None
    rounds: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.steps is None and self.rounds is None:
            raise ModelError("claim", "give a step budget, a round budget or both")
        for field in ("steps", "rounds"):
            v = getattr(self, field)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ModelError(f"claim.{field}", f"must be an integer >= 0, got {v!r}")

    @property
    def step_horizon(self) -> int:
        """The steps an encoding needs: a schedule of at most R rounds has at most R non-empty steps."""
        return self.steps if self.steps is not None else self.rounds  # type: ignore[return-value]

    def text(self, topo: Topology, coll: Collective) -> str:
        budget = " and ".join(x for x in (f"at most {self.steps} step(s)" if self.steps is not None else "",
                                          f"at most {self.rounds} round(s)" if self.rounds is not None else "") if x)
        root = f" (root {coll.root})" if coll.root is not None else ""
        return (f"no {coll.name}{root} schedule on {topo.name} with C={coll.chunk_factor} chunk(s) per input "
                f"finishes in {budget}")

    def to_json(self, topo: Topology, coll: Collective) -> dict[str, Any]:
        return {"text": self.text(topo, coll), "steps": self.steps, "rounds": self.rounds,
                "chunks": coll.chunk_factor}

    @classmethod
    def from_json(cls, data: Any) -> Claim:
        if not isinstance(data, dict):
            raise ModelError("claim", "expected an object with steps and rounds")
        return cls(data.get("steps"), data.get("rounds"))
