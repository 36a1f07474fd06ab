"""Schedule: the step-level k-synchronous algorithm, with the topology and collective it is for."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from smtcoll.errors import ModelError
from smtcoll.model.collective import Collective
from smtcoll.model.instance import Instance
from smtcoll.model.topology import Topology


@attrs.frozen(order=True)
class Send:
    """Move the value at address `chunk` from `src` to `dst`. For a non-combining collective the
    address is the chunk's own; for a combining one the sender's partial value is added at `dst`."""

    chunk: int
    src: int
    dst: int


def _sends(items: Iterable[Send]) -> tuple[Send, ...]:
    return tuple(items)


@attrs.frozen
class Step:
    rounds: int
    sends: tuple[Send, ...] = attrs.field(converter=_sends)


def _steps(items: Iterable[Step]) -> tuple[Step, ...]:
    return tuple(items)


@attrs.frozen
class Schedule:
    """Well-formed (ranks and rounds in range) but not necessarily correct: the checker decides
    correctness, including sends of addresses the collective does not have."""

    topology: Topology
    collective: Collective
    steps: tuple[Step, ...] = attrs.field(converter=_steps)
    name: str = ""

    def __attrs_post_init__(self) -> None:
        if self.topology.ranks != self.collective.ranks:
            raise ModelError("collective", f"has {self.collective.ranks} ranks but the topology has "
                                           f"{self.topology.ranks}")
        n = self.topology.ranks
        for i, step in enumerate(self.steps):
            if not isinstance(step.rounds, int) or isinstance(step.rounds, bool) or step.rounds < 1:
                raise ModelError(f"steps[{i}].rounds", f"must be an integer >= 1, got {step.rounds!r}")
            # the distinct values are few (at most the ranks and addresses): check those, and walk the
            # sends one by one only to name the first bad one
            ends = {s.src for s in step.sends} | {s.dst for s in step.sends}
            chunks = {s.chunk for s in step.sends}
            if (all(isinstance(r, int) and 0 <= r < n for r in ends)
                    and all(isinstance(c, int) and c >= 0 for c in chunks)):
                continue
            for j, send in enumerate(step.sends):
                w = f"steps[{i}].sends[{j}]"
                for field in ("src", "dst"):
                    r = getattr(send, field)
                    if not isinstance(r, int) or not 0 <= r < self.topology.ranks:
                        raise ModelError(f"{w}.{field}", f"= {r}: rank out of range "
                                                         f"(topology has {self.topology.ranks} ranks)")
                if not isinstance(send.chunk, int) or send.chunk < 0:
                    raise ModelError(f"{w}.chunk", f"must be an integer >= 0, got {send.chunk!r}")

    def renamed(self, name: str) -> Schedule:
        """The same schedule under another name, without validating its (unchanged) parts again."""
        copy = object.__new__(Schedule)
        for field in attrs.fields(Schedule):
            object.__setattr__(copy, field.name, name if field.name == "name" else getattr(self, field.name))
        return copy

    @property
    def rounds(self) -> int:
        return sum(step.rounds for step in self.steps)

    @property
    def instance(self) -> Instance:
        return Instance(steps=max(1, len(self.steps)), rounds=max(1, len(self.steps), self.rounds),
                        chunks=self.collective.chunk_factor)
