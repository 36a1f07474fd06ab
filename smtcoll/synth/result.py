"""What a synthesis run returns: every instance tried, the Pareto points, and why the rest was pruned."""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import attrs

from smtcoll.model import Schedule

if TYPE_CHECKING:  # the bounds import numpy and networkx: not for the result's type alone
    from smtcoll.bounds import SearchBounds

Status = Literal["found", "infeasible", "timeout"]


@attrs.frozen
class Outcome:
    """One solver call: `sat`, `unsat` or `unknown` (time limit), the schedule when sat."""

    verdict: str
    schedule: Schedule | None
    seconds: float
    rounds: int | None = None
    # for unknown: "memory" (the memory cap), "budget" (the work budget), "share" (one question's share of
    # the budget, Clock.share), "" the time limit
    reason: str = ""
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


def _variants(items: Iterable[Variant]) -> tuple[Variant, ...]:
    return tuple(items)


@attrs.frozen
class LowerBound:
    """The bounds a result reports (`lower_bound` in the JSON; the keys mean what they mean in `smtcoll
    bounds`): `steps` with any rounds, `rounds` in all at the result's chunks, `least_steps` the steps
    when each step has one round (when asked), and `rounds_per_chunk` for every chunk factor. None: no
    bound, because no schedule exists (the `*_why` say why)."""

    steps: int | None
    steps_why: str
    rounds: int | None
    rounds_why: str
    least_steps: int | None
    least_steps_why: str
    rounds_per_chunk: Fraction | None

    @classmethod
    def of(cls, b: SearchBounds, one_round_per_step: bool = True, chunks: int = 1) -> LowerBound:
        """The search's bounds at `chunks`; `one_round_per_step`: the least steps count the rounds too."""
        from smtcoll.bounds import explain

        return cls(b.steps_value, explain(b.steps), b.rounds(chunks), b.why_rounds(chunks),
                   b.least_steps(one_round_per_step, chunks), b.steps_why(one_round_per_step, chunks),
                   b.rounds_per_chunk)

    @classmethod
    def none(cls, why: str) -> LowerBound:
        """No bound at all: no schedule exists, for the reason `why`."""
        return cls(None, why, None, why, None, why, None)

    @property
    def rounds_per_chunk_value(self) -> float | None:
        """Rounds per chunk as the JSON has it (rounded to 6 decimals)."""
        return None if self.rounds_per_chunk is None else _ratio(self.rounds_per_chunk)

    def to_json(self) -> dict[str, Any]:
        q = self.rounds_per_chunk
        return {"steps": self.steps, "steps_why": self.steps_why, "rounds": self.rounds, "rounds_why": self.rounds_why,
                "least_steps": self.least_steps, "least_steps_why": self.least_steps_why,
                "rounds_per_chunk": self.rounds_per_chunk_value,
                "rounds_per_chunk_exact": None if q is None else str(q)}


@attrs.frozen
class Unreachable:
    """The witness: `rank` needs `chunk`, which starts at `holders`, and no path leads from them to it."""

    rank: int
    chunk: int
    holders: tuple[int, ...]

    def text(self) -> str:
        hs = ", ".join(map(str, self.holders[:8])) + (", ..." if len(self.holders) > 8 else "")
        return (f"rank {self.rank} needs chunk {self.chunk}, but no path of links leads to it from the rank(s) "
                f"that hold the chunk at the start ({hs})")

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "chunk": self.chunk, "holders": list(self.holders)}


Frontier = tuple[tuple[int, int | None, int], ...]  # (steps, rounds, chunks) of each Pareto point


def _frontier(items: Iterable[Iterable[int | None]] | None) -> Frontier | None:
    if items is None:
        return None
    out: list[tuple[int, int | None, int]] = []
    for s, r, c in items:
        assert s is not None and c is not None  # a point has its steps and chunks
        out.append((s, r, c))
    return tuple(out)


@attrs.frozen
class Optimality:
    """What is proved about the answer (`optimal` in the JSON); build it with the class methods. `proved`
    None: nothing is claimed (an instance answers only its own question). A field left unset (None, "")
    is left out of the JSON, except `steps_at_most` of an unproved range, which is null when no schedule
    is known."""

    proved: bool | None = None
    steps: int | None = None  # the fewest steps, proved
    steps_at_least: int | None = None
    steps_at_most: int | None = None
    frontier: Frontier | None = attrs.field(default=None, converter=_frontier)
    why: str = ""
    witness: Unreachable | None = None

    @classmethod
    def optimum(cls, steps: int, why: str) -> Optimality:
        """`steps` is the fewest, for the reason `why` (a lower bound met, or unsat below)."""
        return cls(proved=True, steps=steps, why=why)

    @classmethod
    def between(cls, at_least: int, at_most: int | None) -> Optimality:
        """Not proved: the fewest steps is at least `at_least`, at most `at_most` (None: no schedule known)."""
        return cls(proved=False, steps_at_least=at_least, steps_at_most=at_most)

    @classmethod
    def none_below(cls, at_least: int) -> Optimality:
        """Proved: no schedule with fewer than `at_least` steps (and none was searched beyond)."""
        return cls(proved=True, steps_at_least=at_least)

    @classmethod
    def of_frontier(cls, points: Iterable[Point], proved: bool) -> Optimality:
        """The Pareto points found, `proved` complete or not."""
        return cls(proved=proved, frontier=[(p.steps, p.rounds, p.chunks) for p in points])

    @classmethod
    def unreachable(cls, witness: Unreachable) -> Optimality:
        """Proved: no schedule exists, a rank needs a chunk that cannot reach it."""
        return cls(proved=True, why=witness.text(), witness=witness)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.steps is not None:
            out["steps"] = self.steps
        if self.steps_at_least is not None:
            out["steps_at_least"] = self.steps_at_least
            if not self.proved:
                out["steps_at_most"] = self.steps_at_most
        if self.frontier is not None:
            out["frontier"] = [list(p) for p in self.frontier]
        if self.proved is not None:
            out["proved"] = self.proved
        if self.why:
            out["why"] = self.why
        if self.witness is not None:
            out["witness"] = self.witness.to_json()
        return out


@attrs.frozen
class Variant:
    """Another shape of the same collective, next to the direct answer (Allreduce as ReduceScatter +
    Allgather): its steps and rounds, or `status` ("not applicable", "timeout") and `why` without one."""

    method: str
    steps: int | None = None
    rounds: int | None = None
    status: str = ""
    why: str = ""
    reducescatter_steps: int | None = None
    allgather_steps: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        for name in ("status", "why"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        for name in ("steps", "rounds", "reducescatter_steps", "allgather_steps"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


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
    lower_bound: LowerBound | None  # None: the synthesizer failed before any bound (the sweep's report)
    attempts: tuple[Attempt, ...] = attrs.field(converter=_attempts)
    points: tuple[Point, ...] = attrs.field(converter=_points, default=())
    pruned: tuple[Point, ...] = attrs.field(converter=_points, default=())
    optimal: Optimality = Optimality()
    variants: tuple[Variant, ...] = attrs.field(converter=_variants, default=())
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
            "optimal": self.optimal.to_json(),
            "lower_bound": self.lower_bound.to_json() if self.lower_bound is not None else {},
            "points": [p.to_json() for p in self.points],
            "pruned": [p.to_json() for p in self.pruned],
            "variants": [v.to_json() for v in self.variants],
            "attempts": [a.to_json() for a in self.attempts],
            "gap": self.gap.to_json() if self.gap is not None else {},
            "message": self.message,
            "stopped_by": self.stopped_by or None,
            "work": self.work,
            "seconds": round(self.seconds, 3),
        }


def _ratio(q: Fraction) -> float:
    return round(float(q), 6)
