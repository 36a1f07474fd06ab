"""What a synthesis is asked to do: one frozen, validated request that the CLI, the API and the sweep build.

`SynthRequest` holds the strategy, the method, the instance (steps, rounds, chunks) and the limits; it
refuses what the command line refuses, with the same named exceptions (smtcoll/errors.py), before any
work. `check_inputs` adds the rules that need the topology and the collective (rank counts, cells, the
memory estimate). `smtcoll.synth.door.synthesize` is the one function that answers a request.
"""

from __future__ import annotations

import math
from typing import Literal

import attrs

from smtcoll import limits
from smtcoll.errors import ModelError, TooLarge, UsageError
from smtcoll.model import Collective, Instance, Topology

Strategy = Literal["instance", "least-steps", "pareto"]
STRATEGIES: tuple[str, ...] = ("instance", "least-steps", "pareto")
# the throughput constructions, by their `--method` name (smtcoll.synth.constructions.METHODS; a test keeps
# the two equal): named here so that a request is validated without importing them
CONSTRUCTIONS: tuple[str, ...] = ("ring", "tree", "direct", "multiring", "hier", "hier2d", "rail", "treepack",
                                  "exchange", "rail_alltoall", "pairwise", "lanes", "forest", "hierforest")
METHODS: tuple[str, ...] = ("auto", "exact", "scale", *CONSTRUCTIONS)

# The exact search's default budget, in z3 resource units (its deterministic `rlimit` counter): the same
# command stops at the same place on an idle and on a loaded machine. Measured on the 2-core reference
# machine: about 3 million units per CPU second of solving (mi250 Alltoall: 14.2 M units in 4.7 s; DGX-1
# Allgather's whole Pareto frontier: 0.75 M).
DEFAULT_WORK = 10_000_000
# The most one solver question of `auto`'s least-steps search spends of that default budget; a question
# that reaches it is left undecided and the next step count gets the rest. z3's units get dearer as a
# question goes on (mixring6 Allgather --chunks 8 at 16 steps, loaded machine: 4 M units 1.9 CPU s, 6 M
# 6.9 s, 10 M 19-21 s), so shares keep the default under 10 CPU s; and one hard count (pcie2s8
# ReduceScatter at 4 steps, 7.1 M units to prove unsat) no longer leaves the next (5: 3.4 M) unanswered.
QUERY_WORK = 4_000_000
WORK_PER_SECOND = 3_000_000  # for callers that state their budget in seconds (the sweep's `--timeout`)
MAX_WORK = 10**15
MAX_STEPS_CHUNKS = 64  # --max-chunks: chunks per input the Pareto search considers


def _count(name: str, value: int | None, high: int, low: int = 1) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise UsageError(name, f"must be an integer, got {value!r}")
    if value < low:
        raise UsageError(name, f"= {value}: must be >= {low}")
    if value > high:
        raise TooLarge(name, f"= {value}: at most {high}")


@attrs.frozen
class Limits:
    """When the search stops. `work`: the exact search's budget in z3 resource units (None: the default
    budget, DEFAULT_WORK; 0: none); `timeout`: the wall-clock safety stop in seconds; `max_memory_mb`: the
    memory cap (None: 3/4 of the memory, at most 4096 MB); `max_cells`: ranks x chunks refused above."""

    timeout: float | None = None
    work: int | None = None
    max_memory_mb: int | None = None
    max_cells: int = limits.MAX_CELLS

    def __attrs_post_init__(self) -> None:
        if self.timeout is not None and (isinstance(self.timeout, bool)
                                         or not isinstance(self.timeout, int | float)):
            raise UsageError("--timeout", f"must be a number of seconds, got {self.timeout!r}")
        limits.check_timeout(self.timeout)
        if self.timeout is not None and math.isfinite(self.timeout) and self.timeout > 7 * 24 * 3600:
            raise TooLarge("--timeout", f"= {self.timeout}: at most a week ({7 * 24 * 3600} s)")
        _count("--budget", self.work, MAX_WORK, low=0)
        _count("--max-memory", self.max_memory_mb, 1 << 24, low=64)
        _count("--max-cells", self.max_cells, 1 << 40)

    @property
    def budget(self) -> int | None:
        """The work budget in effect (None: unlimited)."""
        if self.work is None:
            return DEFAULT_WORK
        return self.work or None

    @property
    def memory_mb(self) -> int:
        return self.max_memory_mb if self.max_memory_mb is not None else limits.default_memory_mb()

    def given(self, limit: str) -> bool:
        """Whether the user set the limit named as `SynthResult.stopped_by` names it."""
        return {"budget": self.work is not None, "time": self.timeout is not None,
                "memory": self.max_memory_mb is not None}.get(limit, True)


@attrs.frozen
class SynthRequest:
    """One synthesis question. `strategy` None: `instance` when `steps` is given, else `least-steps`.

    >>> SynthRequest(steps=3, rounds=7, chunks=2).instance
    Instance(steps=3, rounds=7, chunks=2)
    >>> SynthRequest(steps=3, rounds=2)
    Traceback (most recent call last):
    smtcoll.errors.ModelError: rounds: = 2: rounds must be >= steps (3)
    """

    strategy: Strategy | None = None
    method: str = "auto"  # one of METHODS, checked below
    steps: int | None = None
    rounds: int | None = None
    chunks: int = 1
    max_steps: int | None = None  # least-steps, pareto: give up above (default: lower bound + 2 x ranks)
    max_chunks: int = 6  # pareto: the most chunks per input considered
    limits: Limits = Limits()

    def __attrs_post_init__(self) -> None:
        if self.strategy is not None and self.strategy not in STRATEGIES:
            raise UsageError("--strategy", f"must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}")
        if self.method not in METHODS:
            raise UsageError("--method", f"must be one of {', '.join(METHODS)}, got {self.method!r}")
        _count("--steps", self.steps, limits.MAX_ROUNDS)
        _count("--rounds", self.rounds, limits.MAX_ROUNDS)
        _count("--max-steps", self.max_steps, limits.MAX_ROUNDS)
        _count("--chunks", self.chunks, limits.MAX_CHUNKS)
        _count("--max-chunks", self.max_chunks, MAX_STEPS_CHUNKS)
        chosen = self.chosen
        if chosen == "instance" and self.steps is None:
            raise ModelError("--steps", "the instance strategy needs --steps S")
        if chosen != "instance" and self.steps is not None:
            raise ModelError("--steps", f"applies to the instance strategy only, not {chosen}")
        if chosen == "pareto" and (self.chunks != 1 or self.rounds is not None):
            raise ModelError("--chunks/--rounds", "pareto searches every rounds and chunks count itself; "
                                                  "bound it with --max-chunks and --max-steps")
        if self.steps is not None:
            Instance(self.steps, self.rounds, self.chunks)  # rounds >= steps, with Instance's message
        if self.method in CONSTRUCTIONS:
            if chosen != "least-steps":
                raise ModelError("--method", f"the {self.method} construction builds one schedule (least-steps), "
                                             f"not {chosen}")
            if self.chunks != 1 or self.rounds is not None:
                raise ModelError("--chunks" if self.chunks != 1 else "--rounds",
                                 f"the {self.method} construction chooses its own chunk count and rounds; leave "
                                 f"{'--chunks' if self.chunks != 1 else '--rounds'} out")
        if self.method == "scale" and chosen == "instance":
            raise ModelError("--method", "the engine (scale) finds the fewest steps it can, not a given instance; "
                                         "--steps asks the exact search (--method exact or auto)")
        if self.method == "scale" and self.rounds is not None:
            raise ModelError("--rounds", "the engine (--method scale) answers one round per step; use --method "
                                         "exact for a total number of rounds")

    @property
    def chosen(self) -> str:
        return self.strategy or ("instance" if self.steps is not None else "least-steps")

    @property
    def instance(self) -> Instance | None:
        """The instance asked for (the instance strategy), with `rounds` None for any rounds."""
        return None if self.steps is None else Instance(self.steps, self.rounds, self.chunks)


def check_inputs(topo: Topology, coll: Collective, request: SynthRequest) -> None:
    """The rules that need the inputs: one rank count, the cells after the split, and (the instance
    strategy) an encoding estimated to fit the memory cap, all before any work."""
    if coll.ranks != topo.ranks:
        raise ModelError("collective", f"has {coll.ranks} ranks but topology {topo.name} has {topo.ranks}")
    with limits.cell_limit(request.limits.max_cells):
        factor = request.max_chunks if request.chosen == "pareto" else request.chunks
        limits.check_cells(coll.name, coll.ranks, coll.chunks, factor)
    if request.chosen == "instance" and request.method != "scale":
        assert request.steps is not None  # the instance strategy needs steps (checked by the request)
        rounds = request.rounds or request.steps
        n = limits.encoding_variables(request.steps, rounds, topo.ranks, len(topo.links),
                                      coll.chunks * request.chunks, len(coll.addresses) * request.chunks,
                                      coll.is_combining)
        memory = request.limits.memory_mb
        if not limits.encoding_fits(n, memory):
            raise TooLarge("instance", f"the encoding of {request.steps} steps, {rounds} rounds and "
                                       f"{request.chunks} chunk(s) (about {n} variables) would not fit in "
                                       f"{memory} MB", "--max-memory")
