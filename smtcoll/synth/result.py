"""What a synthesis run returns: every instance tried, the Pareto points, and why the rest was pruned."""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any, Literal

import attrs

from smtcoll.model import Schedule

Status = Literal["found", "infeasible", "timeout"]


@attrs.frozen
class Outcome:
    """One solver call: `sat`, `unsat` or `unknown` (time limit), the schedule when sat."""

    verdict: str
    schedule: Schedule | None
    seconds: float
    rounds: int | None = None
    reason: str = ""  # for unknown: "memory" (the memory cap), "budget" (the work budget), "" the time limit
    work: int = 0  # z3 resource units spent (its rlimit counter): deterministic, unlike seconds

    @property
    def found(self) -> Schedule:
        """The schedule of a sat outcome (a sat outcome without one is a bug of ours)."""
        if self.schedule is None:
            from smtcoll.errors import InternalError

            raise InternalError(f"internal error: a {self.verdict} solver outcome without a schedule")
        return self.schedule


@attrs.frozen
class Attempt:
    """One solver question: is there a schedule with `steps` steps, at most `rounds` rounds (None: any
    number) and the collective split in `chunks`? `verdict` is sat, unsat or timeout."""

    steps: int
    rounds: int | None
    chunks: int
    verdict: str
    seconds: float
    method: str = "direct"

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "rounds": self.rounds, "chunks": self.chunks, "verdict": self.verdict,
                "method": self.method, "seconds": round(self.seconds, 3)}


@attrs.frozen
class Point:
    """A (steps, rounds, chunks) point: found (with a schedule), or pruned with the reason."""

    steps: int
    rounds: int | None
    chunks: int
    status: str  # found | infeasible | timeout
    why: str = ""
    schedule: Schedule | None = attrs.field(default=None, eq=False, repr=False)
    # The statement about schedules this pruning rests on, "no schedule with at most `steps` steps and at
    # most `rounds` rounds" (None: unbounded) at `chunks`; None when the pruning is plain arithmetic
    # (rounds >= steps, domination), which needs no certificate.
    claim: tuple[int | None, int | None] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": self.steps, "rounds": self.rounds, "chunks": self.chunks}
        if self.rounds is not None:
            out["rounds_per_chunk"] = _ratio(Fraction(self.rounds, self.chunks))
        out["status"] = self.status
        if self.why:
            out["why"] = self.why
        if self.claim is not None:
            out["claim"] = {"steps": self.claim[0], "rounds": self.claim[1]}
        return out


def _attempts(items: Iterable[Attempt]) -> tuple[Attempt, ...]:
    return tuple(items)


def _points(items: Iterable[Point]) -> tuple[Point, ...]:
    return tuple(items)


def _dicts(items: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    return tuple(items)


@attrs.frozen
class Gap:
    """Where the engine's schedule stands against the bounds (one round per step): what it may lose."""

    method: str
    steps: int
    rounds: int
    steps_bound: int
    rounds_bound: int

    @property
    def gap_steps(self) -> int:
        return self.steps - self.steps_bound

    @property
    def gap_rounds(self) -> int:
        return self.rounds - self.rounds_bound

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "steps": self.steps, "rounds": self.rounds, "steps_bound": self.steps_bound,
                "rounds_bound": self.rounds_bound, "gap_steps": self.gap_steps, "gap_rounds": self.gap_rounds}


JSON_SCHEMA = "smtcoll-synth/1"  # the version of the shape of `synth --format json` and of to_json (docs/synth.md)


@attrs.frozen
class SynthResult:
    status: Status
    schedule: Schedule | None
    strategy: str
    lower_bound: dict[str, Any]
    attempts: tuple[Attempt, ...] = attrs.field(converter=_attempts)
    points: tuple[Point, ...] = attrs.field(converter=_points, default=())
    pruned: tuple[Point, ...] = attrs.field(converter=_points, default=())
    optimal: dict[str, Any] = attrs.field(factory=dict)
    variants: tuple[dict[str, Any], ...] = attrs.field(converter=_dicts, default=())
    message: str = ""
    seconds: float = 0.0
    method: str = "exact"  # what produced the schedule: the exact search, or the engine's method
    gap: Gap | None = None  # engine results: steps and rounds against the bounds
    # the limit that stopped the exact search, "" when none did: "budget" (its work budget, deterministic),
    # "time" (the wall-clock safety stop of --timeout) or "memory" (--max-memory)
    stopped_by: str = ""
    work: int = 0  # z3 resource units the exact search spent (deterministic: the budget's unit)

    def to_json(self) -> dict[str, Any]:
        s = self.schedule
        return {
            "schema": JSON_SCHEMA,
            "status": self.status,
            "strategy": self.strategy,
            "method": self.method,
            "steps": len(s.steps) if s else None,
            "rounds": s.rounds if s else None,
            "chunks": s.collective.chunk_factor if s else None,
            "optimal": self.optimal,
            "lower_bound": self.lower_bound,
            "points": [p.to_json() for p in self.points],
            "pruned": [p.to_json() for p in self.pruned],
            "variants": list(self.variants),
            "attempts": [a.to_json() for a in self.attempts],
            "gap": self.gap.to_json() if self.gap is not None else {},
            "message": self.message,
            "stopped_by": self.stopped_by or None,
            "work": self.work,
            "seconds": round(self.seconds, 3),
        }


def _ratio(q: Fraction) -> float:
    return round(float(q), 6)
