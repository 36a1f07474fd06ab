"""Search strategies over instances: one instance, the least steps, and the (steps, rounds/chunk) frontier.

Every claim of impossibility comes from an UNSAT answer of an exact encoding or from a bound in
`smtcoll.bounds` (the module `smtcoll bounds` prints), using only facts that are proved (docs/synth.md):
- more rounds never hurt: a schedule with R rounds is one with R' > R (pad a step);
- an extra step never hurts: (S, R, C) feasible gives (S+1, R+1, C) (add an empty one-round step);
- fewer chunks never hurt the steps: (S, R, C) feasible gives (S, R, 1) (keep piece 0 of every chunk);
- a schedule has R >= S, so with at most C_max chunks its rounds per chunk is >= S / C_max.
Every schedule returned was first accepted by the independent checker.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import attrs

from smtcoll.bounds import SearchBounds as Bounds
from smtcoll.bounds import search_bounds as bounds
from smtcoll.errors import InternalError
from smtcoll.limits import encoding_fits, encoding_variables
from smtcoll.model import Collective, Instance, Schedule, Step, Topology
from smtcoll.synth.checked import checked
from smtcoll.synth.combining import compose, dual_collective, reverse_schedule
from smtcoll.synth.exact.symmetry import SymmetricEncoding, applicable
from smtcoll.synth.greedy import greedy_schedule
from smtcoll.synth.reach import unreachable_result
from smtcoll.synth.result import Attempt, LowerBound, Optimality, Outcome, Point, SynthResult, Variant

Progress = Callable[[Attempt], None]


class SynthBug(InternalError):
    """The checker rejected a schedule the synthesizer produced: never returned to the user."""


def tight_rounds(schedule: Schedule) -> Schedule:
    """The same sends with each step's rounds lowered to the fewest its loads need."""
    topo = schedule.topology
    steps = []
    for step in schedule.steps:
        load: dict[tuple[int, int], int] = {}
        for s in step.sends:
            load[s.src, s.dst] = load.get((s.src, s.dst), 0) + 1
        need = 1
        for (u, v), n in load.items():
            need = max(need, math.ceil(n / topo.bandwidth(u, v)))
        for g in topo.switches:
            n = sum(k for (u, v), k in load.items() if u in g.srcs and v in g.dsts)
            need = max(need, math.ceil(n / g.bandwidth))
        steps.append(Step(need, step.sends))
    return Schedule(schedule.topology, schedule.collective, steps, schedule.name)


def _checked(schedule: Schedule) -> Schedule:
    return checked(schedule, "synthesized", SynthBug)


class Clock:
    """The limits of a run: its work budget in z3 resource units (deterministic: the same answers on an
    idle and a loaded machine), the wall-clock time limit (the safety stop of --timeout) and the memory
    cap (MB) that refuses encodings too large; None: no such limit. `share`: the most units one solver
    question may spend (None: all that is left), also deterministic."""

    def __init__(self, timeout: float | None, max_memory_mb: int | None = None, work: int | None = None,
                 share: int | None = None) -> None:
        self.start = time.monotonic()
        self.deadline = None if timeout is None else self.start + timeout
        self.max_memory_mb = max_memory_mb
        self.work = work
        self.share = share
        self.spent = 0

    def work_left(self) -> int | None:
        return None if self.work is None else max(0, self.work - self.spent)

    def question_work(self) -> int | None:
        """The units the next solver question may spend: what is left, at most its share."""
        left = self.work_left()
        if self.share is None:
            return left
        return self.share if left is None else min(left, self.share)

    def spend(self, units: int) -> None:
        self.spent += units

    def out_of_work(self) -> bool:
        return self.work is not None and self.spent >= self.work

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def expired(self) -> bool:
        return self.out_of_work() or self.out_of_time()


class InstanceSolver:
    """Answers (steps, rounds, chunks) questions for one topology and collective, keeping encodings for
    repeated questions with fewer rounds. Combining collectives with a dual try the (fast, tree-shaped)
    dual first; only the exact direct encoding may answer unsat."""

    def __init__(self, topo: Topology, base: Collective, clock: Clock, progress: Progress | None = None) -> None:
        self.topo, self.base, self.clock, self.progress = topo, base, clock, progress
        self.attempts: list[Attempt] = []
        self.limit = "time"  # the limit behind the last `unknown`: "time", "budget" or "memory" (limit_text)
        # Encoding or SymmetricEncoding, by kind and the instance encoded (rounds: the cap; None: any rounds)
        self._enc: dict[tuple[str, Instance], Any] = {}

    def collective(self, chunks: int) -> Collective:
        return self.base.with_chunks(chunks)

    def _group(self, coll: Collective) -> list[list[int]] | None:
        if not hasattr(self, "_groups"):
            self._groups = applicable(self.topo, coll)
        return self._groups

    def _encoding(self, kind: str, question: Instance, cap: int | None) -> Any:
        steps, rounds, chunks = question.steps, question.rounds, question.chunks
        # reuse an encoding whose rounds cap covers the question (the rounds are assumptions)
        for (k, encoded), enc in self._enc.items():
            if k == kind and encoded.steps == steps and encoded.chunks == chunks and \
                    (encoded.rounds is None) == (rounds is None) and \
                    (encoded.rounds is None or rounds is None or encoded.rounds >= rounds):
                return enc
        rounds = None if rounds is None else max(rounds, cap or 0)
        key = (kind, Instance(steps, rounds, chunks))
        coll = self.collective(chunks)
        self._fits(coll, steps, steps if rounds is None else rounds)
        if kind == "symmetric":
            group = self._group(coll)
            assert group is not None  # "symmetric" is tried only when the group exists (solve)
            enc = SymmetricEncoding(self.topo, coll, group, steps,
                                    steps if rounds is None else rounds, deadline=self.clock.deadline)
            self._enc[key] = enc
            return enc
        # z3 is imported only when a question needs the solver (bounds and the greedy answer many alone)
        from smtcoll.synth.exact.encoding import Encoding

        if kind == "dual":
            pair = dual_collective(coll)
            assert pair is not None  # "dual" is tried only when the dual exists (solve)
            dual = pair[0]
            enc = Encoding(self.topo.reversed(), dual, steps, rounds, tree=True, unbounded=rounds is None,
                           deadline=self.clock.deadline)
        else:
            # broadcast-like collectives (a chunk needed at many ranks): trying "send" first finds the
            # tight schedules much faster (DGX-1 Allgather (3,7,6): 1.6 s instead of 4.2 s); it slows
            # down the single-destination ones (Star(8) Alltoall 4.6 s instead of 0.6 s): measured
            phase = None if _single_needers(coll) else "always_true"
            enc = Encoding(self.topo, coll, steps, rounds, unbounded=rounds is None,
                           progress_only=kind == "shortest", phase=phase, deadline=self.clock.deadline)
        self._enc[key] = enc
        return enc

    def solve(self, question: Instance, cap: int | None = None) -> Outcome:
        """Is there a schedule of `question`: its steps, at most its rounds (None: any) and its chunks?
        `cap`: the most rounds later questions about (steps, chunks) may ask, to encode once."""
        steps, rounds, chunks = question.steps, question.rounds, question.chunks
        coll = self.collective(chunks)
        kinds = ["direct"]
        if coll.is_combining and dual_collective(coll) is not None:
            kinds = ["dual", "direct"]
        elif rounds is not None and self._group(coll) is not None:
            kinds = ["symmetric", "direct"]
        elif rounds is not None and _single_needers(coll):
            kinds = ["shortest", "direct"]
        for kind in kinds:
            if self.clock.expired():
                self.limit = "budget" if self.clock.out_of_work() else "time"
                self.record(steps, rounds, chunks, "budget" if self.limit == "budget" else "timeout", 0.0, kind)
                return Outcome("unknown", None, 0.0, reason=self.limit)
            t0 = time.process_time()
            from smtcoll.synth.exact.encoding import OutOfTime

            try:
                enc = self._encoding(kind, question, cap)
                out = enc.check(rounds, deadline=self.clock.deadline, work=self.clock.question_work())
                self.clock.spend(out.work)
                if out.reason == "budget" and not self.clock.out_of_work():
                    out = attrs.evolve(out, reason="share")  # its share spent, not the budget: others may answer
            except OutOfTime:
                out = Outcome("unknown", None, time.process_time() - t0)
            except _TooLarge:
                out = Outcome("unknown", None, 0.0, reason="memory")
            seconds = time.process_time() - t0
            if out.verdict == "sat":
                sched = out.schedule
                if kind == "dual":
                    pair = dual_collective(coll)
                    assert pair is not None  # "dual" is tried only when the dual exists
                    sched = reverse_schedule(sched, self.topo, coll, pair[1])
                sched = _checked(tight_rounds(sched))
                self.record(steps, rounds, chunks, "sat", seconds, kind)
                return Outcome("sat", sched, seconds, sched.rounds)
            if out.verdict == "unknown":
                self.limit = out.reason or "time"
                verdict = {"memory": "memory-limit", "budget": "budget", "share": "budget"}.get(self.limit, "timeout")
                self.record(steps, rounds, chunks, verdict, seconds, kind)
                return Outcome("unknown", None, seconds, reason=self.limit)
            # only the exact encoding may answer unsat; the others are shapes tried first
            self.record(steps, rounds, chunks, "unsat" if kind == "direct" else "no-shape", seconds, kind)
            if kind == "direct":
                return out
        return Outcome("unsat", None, 0.0)

    def _fits(self, coll: Collective, steps: int, rounds: int) -> None:
        """Refuse (as a memory limit) an encoding estimated not to fit the memory cap, before building it."""
        if self.clock.max_memory_mb is None:
            return
        n = encoding_variables(steps, rounds, coll.ranks, len(self.topo.links), coll.chunks, len(coll.addresses),
                               coll.is_combining)
        if not encoding_fits(n, self.clock.max_memory_mb):
            raise _TooLarge()

    def limit_text(self) -> str:
        if self.limit == "share":
            return f"work budget: {self.clock.share} z3 resource units per step count, {self.clock.spent} spent in all"
        if self.limit == "budget":
            return (f"work budget: {self.clock.work} z3 resource units spent (raise it with --budget; the same "
                    "on any machine)")
        if self.limit == "memory":
            return (f"memory limit: the next encoding would not fit in {self.clock.max_memory_mb} MB "
                    "(raise it with --max-memory)")
        return "time limit"

    def record(self, steps: int, rounds: int | None, chunks: int, verdict: str, seconds: float, kind: str) -> None:
        a = Attempt(steps, rounds, chunks, verdict, seconds, kind)
        self.attempts.append(a)
        if self.progress:
            self.progress(a)


class _TooLarge(Exception):
    """An encoding estimated not to fit the memory cap (answered as `unknown` for the memory limit)."""


def _single_needers(coll: Collective) -> bool:
    """Every chunk is needed by one rank (Alltoall, Gather, Scatter): routes along shortest paths are a
    small shape worth trying before the exact encoding."""
    needers: dict[int, set[int]] = {}
    for r, c in coll.post:
        needers.setdefault(c, set()).add(r)
    return not coll.is_combining and all(len(v) == 1 for v in needers.values())


# --- instance ------------------------------------------------------------------------------------

def instance(topo: Topology, base: Collective, steps: int, rounds: int | None, chunks: int,
             timeout: float | None = None, progress: Progress | None = None,
             max_memory_mb: int | None = None, work: int | None = None,
             clock: Clock | None = None) -> SynthResult:
    clock = clock or Clock(timeout, max_memory_mb, work)  # a caller's clock: its limits are shared
    if (early := unreachable_result(topo, base, "instance", clock.start)) is not None:
        return early
    solver = InstanceSolver(topo, base, clock, progress)
    coll = solver.collective(chunks)
    b = bounds(topo, coll)
    R = steps if rounds is None else rounds
    lb = LowerBound.of(b, rounds is None, chunks)
    why = _infeasible_by_bound(b, steps, R, chunks)
    if why:
        return SynthResult("infeasible", None, "instance", lb, [],
                           pruned=[Point(steps, R, chunks, "infeasible", why, claim=(steps, R))],
                           message=f"proved: no schedule with {steps} steps and {R} rounds ({why})",
                           seconds=_secs(clock))
    out = solver.solve(Instance(steps, R, chunks))
    if out.verdict == "sat":
        p = Point(steps, out.found.rounds, chunks, "found", schedule=out.schedule)
        return SynthResult("found", out.schedule, "instance", lb, solver.attempts, [p], seconds=_secs(clock))
    if out.verdict == "unsat":
        return SynthResult("infeasible", None, "instance", lb, solver.attempts,
                           pruned=[Point(steps, R, chunks, "infeasible", "unsat", claim=(steps, R))],
                           message=f"proved: no schedule with {steps} steps and {R} rounds (unsat)",
                           seconds=_secs(clock))
    return SynthResult("timeout", None, "instance", lb, solver.attempts, message=f"{solver.limit_text()} reached",
                       seconds=_secs(clock), stopped_by=solver.limit)


def _infeasible_by_bound(b: Bounds, steps: int, rounds: int, chunks: int) -> str:
    if steps < b.steps_value:
        return f"bound: {b.steps_why(False)}"
    if rounds < b.rounds(chunks):
        return f"bound: {b.rounds_why} (at least {b.rounds(chunks)} rounds with {chunks} chunk(s))"
    return ""


def _secs(clock: Clock) -> float:
    return time.monotonic() - clock.start


# --- least steps ---------------------------------------------------------------------------------

def default_max_steps(topo: Topology, lower: int) -> int:
    return lower + 2 * topo.ranks


def least_steps(topo: Topology, base: Collective, rounds: int | None = None, chunks: int = 1,
                max_steps: int | None = None, timeout: float | None = None,
                progress: Progress | None = None, max_memory_mb: int | None = None,
                known: Schedule | None = None, work: int | None = None,
                clock: Clock | None = None) -> SynthResult:
    """Fewest steps (one round per step, or `rounds` rounds in all), starting at the best lower bound.
    `known`: a checked schedule (one round per step) that caps the search when it beats the greedy."""
    clock = clock or Clock(timeout, max_memory_mb, work)  # a caller's clock: its limits are shared
    if (early := unreachable_result(topo, base, "least-steps", clock.start)) is not None:
        return early
    solver = InstanceSolver(topo, base, clock, progress)
    coll = solver.collective(chunks)
    b = bounds(topo, coll)
    lbj = LowerBound.of(b, rounds is None, chunks)
    if b.steps.value is None:
        return SynthResult("infeasible", None, "least-steps", lbj, [], message=f"proved: {b.steps.note}",
                           seconds=_secs(clock))
    if rounds is None:
        start = b.least_steps(True, chunks)
    else:
        start = b.steps_value
    start = max(start, 1)
    top = max_steps if max_steps is not None else default_max_steps(topo, start)
    if rounds is not None:
        top = min(top, rounds)
        if rounds < b.rounds(chunks):
            why = f"bound: {b.rounds_why}"
            return SynthResult("infeasible", None, "least-steps", lbj, [], message=f"proved: no schedule with "
                               f"{rounds} rounds ({why})", seconds=_secs(clock))
    pruned = []
    if start > 1:
        pruned.append(Point(start - 1, None, chunks, "infeasible", f"bound: {b.steps_why(rounds is None, chunks)}",
                            claim=(start - 1, start - 1 if rounds is None else rounds)))
    # a greedy schedule caps the search: an extra step never hurts, so only fewer steps need the solver
    greedy = None
    if rounds is None:
        t0 = time.process_time()
        greedy = greedy_schedule(topo, coll, top, deadline=clock.deadline)
        # the known schedule wins a tie: the caller then names where the answer came from and its gap
        if known is not None and known.rounds == len(known.steps) and len(known.steps) <= top and (
                greedy is None or len(known.steps) <= len(greedy.steps)):
            greedy = known
        if greedy is not None:
            greedy = _checked(greedy)
            top = min(top, len(greedy.steps))
            solver.record(len(greedy.steps), len(greedy.steps), chunks, "sat", time.process_time() - t0, "greedy")
    undecided: list[int] = []  # step counts whose question spent its share of the budget (clock.share)
    for S in range(start, top + 1):
        R = S if rounds is None else rounds
        if greedy is not None and len(greedy.steps) == S:
            out = Outcome("sat", greedy, 0.0, greedy.rounds)
        else:
            out = solver.solve(Instance(S, R, chunks))
        if out.verdict == "sat" and undecided:
            return SynthResult("found", out.found, "least-steps", lbj, solver.attempts,
                               [Point(S, out.found.rounds, chunks, "found")], pruned,
                               Optimality.between(undecided[0], S), seconds=_secs(clock), stopped_by="budget",
                               message=f"{_counts(undecided)} step(s) undecided within {clock.share} z3 resource "
                                       f"units each (the default budget's share per step count)")
        if out.verdict == "sat":
            sched = out.found
            if start == S:
                why = f"lower bound: {b.steps_why(rounds is None, chunks)}"
            else:
                why = f"unsat for {start}..{S - 1} steps" + (f"; below {start}: {b.steps_why(rounds is None, chunks)}"
                                                              if start > 1 else "")
            optimal = Optimality.optimum(S, why)
            variants = _allreduce_variants(topo, base, chunks, sched, clock, progress) if rounds is None else ()
            return SynthResult("found", sched, "least-steps", lbj, solver.attempts,
                               [Point(S, sched.rounds, chunks, "found")], pruned, optimal, variants,
                               seconds=_secs(clock))
        if out.verdict == "unknown" and out.reason == "share":
            undecided.append(S)
            continue
        if out.verdict == "unknown":
            undecided.append(S)
            break
        pruned.append(Point(S, R, chunks, "infeasible", "unsat", claim=(S, R)))
    if undecided:  # the budget (or a share of it, or the time) ran out before a count answered sat
        best = f"; best known: {len(greedy.steps)} steps (greedy)" if greedy is not None else ""
        return SynthResult("timeout", greedy, "least-steps", lbj, solver.attempts, [], pruned,
                           Optimality.between(undecided[0], len(greedy.steps) if greedy else None),
                           message=f"{solver.limit_text()}: no schedule with fewer than {undecided[0]} steps; "
                                   f"{_counts(undecided)} undecided{best}",
                           seconds=_secs(clock), stopped_by="budget" if solver.limit == "share" else solver.limit)
    return SynthResult("infeasible", None, "least-steps", lbj, solver.attempts, [], pruned,
                       Optimality.none_below(top + 1),
                       message=f"proved: no schedule with at most {top} steps", seconds=_secs(clock))


def _counts(steps: list[int]) -> str:
    return ", ".join(map(str, steps))


def _allreduce_variants(topo: Topology, base: Collective, chunks: int, direct: Schedule, clock: Clock,
                        progress: Progress | None) -> tuple[Variant, ...]:
    """For Allreduce: the direct result next to ReduceScatter + Allgather (when chunks is a multiple of
    the ranks), so the user sees which shape is better for this instance."""
    if base.name != "allreduce" or not base.is_combining:
        return ()
    P = base.ranks
    out = [Variant("direct", len(direct.steps), direct.rounds)]
    if chunks % P:
        out.append(Variant("reducescatter+allgather", status="not applicable",
                           why=f"needs --chunks to be a multiple of the ranks ({P})"))
        return tuple(out)
    from smtcoll import library

    k = chunks // P
    rs = least_steps(topo, library.collective("reducescatter", P), chunks=k,
                     timeout=None if clock.deadline is None else max(0.1, clock.deadline - time.monotonic()),
                     progress=progress, clock=clock)
    ag = least_steps(topo, library.collective("allgather", P), chunks=k,
                     timeout=None if clock.deadline is None else max(0.1, clock.deadline - time.monotonic()),
                     progress=progress, clock=clock)
    if rs.schedule is None or ag.schedule is None:
        out.append(Variant("reducescatter+allgather", status="timeout"))
        return tuple(out)
    both = _checked(compose(rs.schedule, ag.schedule, direct.collective))
    out.append(Variant("reducescatter+allgather", len(both.steps), both.rounds,
                       reducescatter_steps=len(rs.schedule.steps), allgather_steps=len(ag.schedule.steps)))
    return tuple(out)


# --- pareto --------------------------------------------------------------------------------------

def pareto(topo: Topology, base: Collective, max_chunks: int = 6, max_steps: int | None = None,
           timeout: float | None = None, progress: Progress | None = None,
           max_memory_mb: int | None = None, work: int | None = None,
           clock: Clock | None = None) -> SynthResult:
    """Every Pareto-optimal (steps, rounds per chunk) point with at most `max_chunks` chunks; at a limit
    (the work budget, the time or the memory), the frontier found so far (not proved complete)."""
    clock = clock or Clock(timeout, max_memory_mb, work)  # a caller's clock: its limits are shared
    if (early := unreachable_result(topo, base, "pareto", clock.start)) is not None:
        return early
    solver = InstanceSolver(topo, base, clock, progress)
    b = bounds(topo, base)
    q_lb = b.rounds_per_chunk
    lbj = LowerBound.of(b, False)
    points: list[Point] = []
    pruned: list[Point] = []

    def timed_out(msg: str, pending: Point | None = None) -> SynthResult:
        """The frontier found so far (with the point of the step count being searched), not proved."""
        pts = points + ([pending] if pending is not None else [])
        return SynthResult("timeout", pts[-1].schedule if pts else None, "pareto", lbj, solver.attempts,
                           pts, pruned, Optimality.of_frontier(pts, False),
                           message=f"{solver.limit_text()} {msg}; the frontier found so far is not proved "
                                   "complete", seconds=_secs(clock), stopped_by=solver.limit)

    # 1. the fewest steps with any rounds (C = 1 suffices: fewer chunks never hurt the steps)
    S = max(1, b.steps_value)
    if S > 1:
        pruned.append(Point(S - 1, None, 1, "infeasible", f"bound: {b.steps_why(False)} (any rounds, any chunks)",
                            claim=(S - 1, None)))
    top = max_steps if max_steps is not None else default_max_steps(topo, S)
    while True:
        if top < S:
            return SynthResult("infeasible", None, "pareto", lbj, solver.attempts, points, pruned,
                               message=f"proved: no schedule with at most {top} steps", seconds=_secs(clock))
        out = solver.solve(Instance(S, None, 1))
        if out.verdict == "sat":
            break
        if out.verdict == "unknown":
            return timed_out(f"while deciding whether {S} steps are possible")
        pruned.append(Point(S, None, 1, "infeasible", "unsat with any rounds (and so with any chunks)",
                            claim=(S, None)))
        S += 1
    first = S
    best: Fraction | None = None
    best_point: Point | None = None
    # rounds the unbounded schedule needs: a feasible cap for C = 1
    r0 = out.found.rounds
    while True:
        if best is not None and Fraction(S, max_chunks) >= best:
            pruned.append(Point(S, None, 0, "infeasible",
                                f"dominated: every schedule with >= {S} steps has rounds/chunk >= {S}/{max_chunks} "
                                f">= {_q(best)} (rounds >= steps, chunks <= {max_chunks})"))
            break
        if top < S:
            pruned.append(Point(S, None, 0, "timeout", f"not searched: --max-steps {top}"))
            break
        improved: Point | None = None
        order = sorted(range(1, max_chunks + 1), key=lambda c: (Fraction(b.rounds(c), c), c))
        if first == S:
            order = [1] + [c for c in order if c != 1]
        for C in order:
            lo = max(S, b.rounds(C))
            if best is None:
                hi = max(r0, lo)  # C = 1 at the first step count: the unbounded schedule's rounds
            else:
                hi = math.ceil(best * C) - 1  # the most rounds that still beat the best ratio
            if hi < lo:
                why = (f"bound: rounds >= {lo} ({'steps' if lo == S else b.rounds_why}), "
                       f"so rounds/chunk >= {_q(Fraction(lo, C))}")
                if best is not None:
                    why += f", not below {_q(best)}"
                pruned.append(Point(S, None, C, "infeasible", why, claim=(S, lo - 1) if lo > S else None))
                continue
            # the bound first (a sat there ends this column and often the search), then the most rounds
            # that would still improve (an unsat there rules out the whole column: more rounds never hurt)
            found: Schedule | None = None
            R = 0
            for probe in ([lo, hi] if lo < hi else [hi]):
                res = solver.solve(Instance(S, probe, C), cap=hi if probe == hi else None)
                if res.verdict == "unknown":
                    return timed_out(f"at {S} steps, {C} chunk(s), {probe} rounds", improved)
                if res.verdict == "sat":
                    found, R = res.found, res.found.rounds
                    break
                pruned.append(Point(S, probe, C, "infeasible", f"unsat with at most {probe} rounds", claim=(S, probe)))
                lo = probe + 1
            if found is None:
                continue
            # between: fewer rounds for this C until unsat
            while lo <= R - 1:
                more = solver.solve(Instance(S, R - 1, C))
                if more.verdict == "unknown":
                    better = best is None or Fraction(R, C) < best
                    return timed_out(f"at {S} steps, {C} chunk(s), {R - 1} rounds",
                                     Point(S, R, C, "found", schedule=found) if better else improved)
                if more.verdict == "unsat":
                    pruned.append(Point(S, R - 1, C, "infeasible", f"unsat with at most {R - 1} rounds",
                                        claim=(S, R - 1)))
                    break
                found, R = more.found, more.found.rounds
            q = Fraction(R, C)
            if best is None or q < best:
                best = q
                improved = Point(S, R, C, "found", schedule=found)
            if best <= q_lb:
                break
        if improved is not None:
            # the same rounds/chunk with fewer chunks is the simpler schedule: look for it
            assert improved.rounds is not None  # a point found has its rounds
            q = Fraction(improved.rounds, improved.chunks)
            for C in range(q.denominator, improved.chunks, q.denominator):
                R = q.numerator * (C // q.denominator)
                if max(S, b.rounds(C)) > R:
                    pruned.append(Point(S, R, C, "infeasible", f"bound: rounds >= {max(S, b.rounds(C))}",
                                        claim=(S, R) if b.rounds(C) > R else None))
                    continue
                res = solver.solve(Instance(S, R, C))
                if res.verdict == "sat":
                    improved = Point(S, res.found.rounds, C, "found", schedule=res.schedule)
                    break
                if res.verdict == "unknown":
                    return timed_out(f"at {S} steps, {C} chunk(s), {R} rounds", improved)
                pruned.append(Point(S, R, C, "infeasible", f"unsat with at most {R} rounds (same rounds/chunk, "
                                                            "fewer chunks)", claim=(S, R)))
            points.append(improved)
            best_point = improved
        if best is not None and best <= q_lb:
            pruned.append(Point(S + 1, None, 0, "infeasible",
                                f"dominated: rounds/chunk {_q(best)} meets the bound ({b.rounds_why})"))
            break
        S += 1
    return SynthResult("found", best_point.schedule if best_point else None, "pareto", lbj, solver.attempts,
                       points, pruned, Optimality.of_frontier(points, True), seconds=_secs(clock))


def _q(q: Fraction) -> str:
    return str(q) if q.denominator != 1 else str(q.numerator)
