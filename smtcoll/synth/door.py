"""The front door of synthesis: `synthesize(topology, collective, request) -> SynthResult`.

The CLI (`smtcoll synth`), the API (`smtcoll.synthesize`) and the sweep build a `SynthRequest` and call
this function, so the same request gives the same result from all three. It chooses the synthesizer:

- `exact`: the SMT search (`smtcoll.synth.exact`, z3), within its work budget;
- `scale`: the large-instance engine (`smtcoll.synth.scale`, no solver): seconds, checked, with its gap;
- a throughput construction (`ring`, `tree`, `direct`, `multiring`, `hier`, `hier2d`, `rail`, `treepack`,
  `exchange`, `pairwise`, `forest`:
  `smtcoll.synth.constructions`): its schedule;
- `auto` (the default): the engine first; the exact search only where it can still improve on it (the
  engine is above the bound and the encoding is small enough to answer within the budget), with the
  engine's schedule as its cap. When a limit the user did not set stops the exact search (the default
  work budget, the default memory cap), the answer is the best schedule known with its gap, exit 0: the
  default answers. A limit the user set (`--timeout`, `--budget`, `--max-memory`) that stops it is
  `timeout` (exit 3), still with the best schedule known.

A new method is one more branch here and, when it needs options, one more field of `SynthRequest`
(docs/architecture.md). Every schedule returned has passed the independent checker (the exact search and
the engine each check what they produce; a rejected one is an internal error, exit 70).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import TYPE_CHECKING

import attrs

from smtcoll import limits
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.reach import unreachable_result
from smtcoll.synth.request import CONSTRUCTIONS, QUERY_WORK, SynthRequest, check_inputs
from smtcoll.synth.result import Attempt, Gap, LowerBound, Optimality, Point, SynthResult

if TYPE_CHECKING:
    from smtcoll.synth.exact.strategies import Clock
    from smtcoll.synth.scale.engine import Scaled

Progress = Callable[[Attempt], None]

AUTO_EXACT_UP_TO = 16  # ranks: beyond, the exact search does not answer within its default budget
# The largest encoding (limits.encoding_variables) `auto` builds: building is not counted by z3's budget,
# and past this it costs seconds and hundreds of MB before the first solver call (measured: ring:16
# Alltoall, about 4 * 10^5 variables, 6.5 s CPU building the first encodings; mi250 Alltoall 1 GB).
AUTO_EXACT_VARIABLES = 60_000


def synthesize(topology: Topology, collective: Collective, request: SynthRequest | None = None,
               progress: Progress | None = None) -> SynthResult:
    """Answer `request` for `collective` (C = 1; the request's `chunks` splits it) on `topology`.

    Raises the named errors of smtcoll.errors for a request the inputs refuse (ModelError for a rank
    count mismatch, TooLarge for an instance above the limits) before any work."""
    request = request or SynthRequest()
    check_inputs(topology, collective, request)
    limits.cap_memory(request.limits.memory_mb)
    early = unreachable_result(topology, collective, request.chosen, time.monotonic())
    if early is not None:
        return early
    from smtcoll.bounds.lp import time_limit

    # --timeout bounds the whole request: every LP (the bounds', the routing's) gets the time left
    with time_limit(request.limits.timeout) as deadline:
        if request.chosen == "instance":
            result = _answered(_instance(topology, collective, request, progress), request)
        elif request.chosen == "pareto":
            result = _answered(_pareto(topology, collective, request, progress), request)
        elif request.method in CONSTRUCTIONS:
            result = construction_result(topology, collective, request.method)
        else:
            result = _answered(_least_steps(topology, collective, request, progress), request)
    return _time_stopped(result, deadline.what())


def _time_stopped(result: SynthResult, what: str) -> SynthResult:
    """A result the time limit cut short (an LP stopped, a method of the engine not tried) says so: its
    bounds or schedule may be weaker than without the limit, so it is `timeout` (exit 3) with what it has."""
    if not what:
        return result
    note = f"the time limit (--timeout) stopped {what}"
    status = "timeout" if result.status == "found" else result.status
    return attrs.evolve(result, status=status, stopped_by=result.stopped_by or "time",
                        message=f"{result.message}; {note}" if result.message else note)


# --- the exact search ----------------------------------------------------------------------------

@contextlib.contextmanager
def _exact_search(request: SynthRequest, shared: bool = False) -> Iterator[Clock]:
    """The exact search's clock (its work budget, the safety time limit, the memory cap), with z3's own
    memory cap set for the run and reset after (the cap is this request's, not the process's). `shared`:
    with `auto`'s default budget, each solver question gets at most QUERY_WORK of it (docs/synth.md)."""
    import z3  # the solver: imported only when the exact search runs

    from smtcoll.bounds.lp import deadline
    from smtcoll.synth.exact.strategies import Clock

    memory = request.limits.memory_mb
    z3.set_param("memory_max_size", memory)
    # the time left of --timeout, which started with the request (the engine may have spent some)
    d = deadline()
    left = d.left() if d is not None else None
    timeout = request.limits.timeout if left is None else max(0.001, left)
    try:
        share = QUERY_WORK if shared and request.method == "auto" and request.limits.work is None else None
        yield Clock(timeout, memory, request.limits.budget, share)
    finally:
        z3.set_param("memory_max_size", 0)
        if d is not None and d.passed():  # the search was cut short or never started: the result says so
            d.searches += 1


def _instance(topo: Topology, coll: Collective, request: SynthRequest, progress: Progress | None) -> SynthResult:
    from smtcoll.synth.exact import strategies

    assert request.steps is not None  # the instance strategy needs steps (checked by the request)
    with _exact_search(request) as clock:
        result = strategies.instance(topo, coll, request.steps, request.rounds, request.chunks, progress=progress,
                                     clock=clock)
    return attrs.evolve(result, work=clock.spent)


def _least_steps(topo: Topology, coll: Collective, request: SynthRequest, progress: Progress | None) -> SynthResult:
    from_engine: SynthResult | None = None
    scaled: Scaled | None = None
    if request.method != "exact" and request.rounds is None:
        from_engine, scaled = engine_result(topo, coll, request.chunks)
        if progress is not None and from_engine.attempts:
            progress(from_engine.attempts[0])
        if request.method == "scale" or scaled is None:
            return from_engine
        over = request.max_steps is not None and len(scaled.schedule.steps) > request.max_steps
        why_not = _exact_cannot_improve(topo, coll, request, scaled)
        if not over and (from_engine.optimal.proved or why_not):
            if why_not and not from_engine.optimal.proved:
                shaped, tried = _node_shape(topo, coll, request, scaled)
                if shaped is not None:
                    return attrs.evolve(shaped, attempts=(*from_engine.attempts, *shaped.attempts))
                return attrs.evolve(from_engine, message=f"{from_engine.message}; {why_not}{tried}")
            return from_engine
    from smtcoll.synth.exact import strategies

    with _exact_search(request, shared=True) as clock:
        exact = strategies.least_steps(topo, coll, request.rounds, request.chunks, request.max_steps, None, progress,
                                       known=None if scaled is None else scaled.schedule, clock=clock)
    exact = attrs.evolve(exact, work=clock.spent)
    if from_engine is None or scaled is None:
        return exact
    if exact.schedule is scaled.schedule:  # the search did not beat the engine: say where it came from
        exact = attrs.evolve(exact, method=from_engine.method, gap=from_engine.gap)
        shaped = _shaped_after_exact(topo, coll, request, scaled, exact)
        if shaped is not None:
            return attrs.evolve(shaped, attempts=(*from_engine.attempts, *exact.attempts, *shaped.attempts),
                                work=exact.work + shaped.work, seconds=exact.seconds + shaped.seconds)
    return attrs.evolve(exact, attempts=(*from_engine.attempts, *exact.attempts))


def _shaped_after_exact(topo: Topology, coll: Collective, request: SynthRequest, scaled: Scaled,
                        exact: SynthResult) -> SynthResult | None:
    """Where the exact search's default budget ran out before it beat the engine, the symmetric searches
    (`_node_shape`) from the fewest steps it left open: they answer where the whole encoding does not (held-out
    cube8 x 2, a 3-cube node with a NIC per GPU, one-chunk Allreduce: the engine 4 steps, the exact search
    undecided at 2 and 3 with its 4 M units each, the symmetric search for sums 3 in 0.3 M; shared2nic8 and
    pcie2s8 x 2, 5 for 6 in 3.4 and 2.8 M), with one question's share of the budget (QUERY_WORK: where they find
    nothing they spent 20 M, a100 x 2 7 CPU s). A limit the user set that stopped the search is respected. The
    result is optimal where the exact search proved the counts below it unsat."""
    if exact.optimal.proved is not False or request.limits.given(exact.stopped_by):
        return None
    shaped, _ = _node_shape(topo, coll, request, scaled, exact.optimal.steps_at_least, QUERY_WORK)
    if shaped is None or shaped.schedule is None:
        return None
    steps, bound = len(shaped.schedule.steps), scaled.bounds.least_steps(True, 1)
    unsat = {p.steps for p in exact.pruned}
    if steps <= bound or not set(range(bound, steps)) <= unsat:  # at the bound, or not proved below it
        return shaped
    why = f"unsat for {bound}..{steps - 1} steps" + (f"; below {bound}: {scaled.bounds.steps_why(True, 1)}"
                                                      if bound > 1 else "")
    return attrs.evolve(shaped, optimal=Optimality.optimum(steps, why), pruned=exact.pruned, message="")


def _node_shape(topo: Topology, coll: Collective, request: SynthRequest, scaled: Scaled,
                least: int | None = None, work: int | None = None) -> tuple[SynthResult | None, str]:
    """Where the exact search is too large, Allgather on identical nodes joined by per-rank NICs gets the
    small node-symmetric search (synth/exact/nodes.py), one-address Allreduce on identical nodes the
    symmetric search for sums (synth/exact/sums.py), for fewer steps than the engine's, within the work
    budget: its result, or None and a note of what it tried ("" if nothing). `least`: fewer steps are
    known impossible (the exact search's unsat counts); `work`: a budget of its own, below the default."""
    from smtcoll.synth.exact.nodes import MAX_VARIABLES, NodeLayout, node_schedule

    lay = NodeLayout.of(topo, coll) if request.chunks == 1 else None
    if lay is None:
        return _sums_shape(topo, coll, request, scaled, least, work)
    t0, c0 = time.monotonic(), time.process_time()
    lo, hi = max(scaled.bounds.least_steps(True, 1), least or 0), len(scaled.schedule.steps)
    if lay.variables(lo) > MAX_VARIABLES:
        return None, (f"; the node-symmetric search is not tried: its encoding of {lo} steps (about "
                      f"{lay.variables(lo)} variables) is beyond {MAX_VARIABLES}")
    with _exact_search(request) as clock:
        left = clock.work_left()
        found, spent, tried = node_schedule(topo, coll, range(lo, hi),
                                            left if work is None or left is None else min(work, left), clock.deadline)
    if found is None:
        return None, (f"; the node-symmetric search found no schedule of {lo}..{hi - 1} steps within "
                      f"{spent} work units" if tried else "")
    return _shaped(found, "node-symmetric", scaled, t0, c0, tried, spent), ""


def _sums_shape(topo: Topology, coll: Collective, request: SynthRequest, scaled: Scaled,
                least: int | None = None, budget: int | None = None) -> tuple[SynthResult | None, str]:
    """The symmetric search for one-address Allreduce (synth/exact/sums.py), with its own default budget."""
    from smtcoll.synth.exact.sums import MAX_SIZE, SUMS_WORK, SUMS_WORK_OVER, groups, size, sums_schedule

    found_groups = groups(topo, coll) if request.chunks == 1 else []
    if not found_groups:
        return None, ""
    t0, c0 = time.monotonic(), time.process_time()
    lo, hi = max(scaled.bounds.aim_steps(), least or 0), len(scaled.schedule.steps)
    target = min(hi - 1, lo * 3 // 2)
    smallest = min(size(topo, g, target) for g in found_groups)
    if smallest > MAX_SIZE:
        lifted = _composed_sums(topo, coll, request, scaled)
        if lifted is not None:
            return lifted, ""
        return None, (f"; the symmetric search for sums is not tried: its encoding of {target} steps (about "
                      f"{smallest} constraints) is beyond {MAX_SIZE}")
    with _exact_search(request) as clock:
        # twice the budget for the first count where the engine is above 1.5x of the bound (issue 24's target:
        # mi250 x 3, 4 steps found with 52.8 M units), nothing more after it; the whole budget below it and two
        # or more steps above; a quarter at 1.5x and two or more above (the search's first count, hi - 1, is
        # not the bound and often beyond the shape: a100 x 5 at 6 for 4, the search for 5 failed in 10 CPU
        # s); two thirds one step above (the bound is the first count: ndv2 x 8, 9 by the engine, 8 found
        # with 16.8 M units; a100 x 3, 4 for 3, fails in 6.7 CPU s rather than 10)
        first = None
        if hi - lo == 1:
            default = SUMS_WORK * 2 // 3
        else:
            default = SUMS_WORK // 4 if 2 * hi == 3 * lo else SUMS_WORK
            first = SUMS_WORK_OVER if 2 * hi > 3 * lo else None
        work = default if request.limits.work is None else clock.work_left()
        if request.limits.work is not None or budget is not None:
            first = None
        if budget is not None:
            work = budget if work is None else min(work, budget)
        found, spent, tried = sums_schedule(topo, coll, lo, hi, work, clock.deadline, first)
    if found is None:
        # the search on fewer nodes, lifted, where the machine's own found nothing (held-out h100 x 6: 7 steps by
        # the engine, none from the search of 48 GPUs in 13 CPU s; 4 on 2 nodes in 0.1 s, three groups: 6)
        lifted = _composed_sums(topo, coll, request, scaled)
        if lifted is not None:
            return lifted, ""
        return None, (f"; the symmetric search for sums found no schedule of {lo}..{hi - 1} steps within "
                      f"{spent} work units" if tried else "")
    return _shaped(found, "symmetric sums", scaled, t0, c0, tried, spent), ""


def _composed_sums(topo: Topology, coll: Collective, request: SynthRequest, scaled: Scaled) -> SynthResult | None:
    """Where the machine's own symmetric search is too large or found nothing: the fewest steps of the search on
    fewer nodes lifted (`_lifted_sums`) and of the rail groups (synth/exact/rail_groups.py: switch nodes with
    NICs shared by GPU pairs, a small search on a few NICs' GPUs of every node, then intervals of blocks inside
    the node; nvl36 x 3: 7, where the engine's lanes take 9), each only where what is known so far is above 1.5x
    of the bound the searches aim from. None where neither beats the engine."""
    from smtcoll.bounds.lp import deadline
    from smtcoll.synth.exact.rail_groups import rail_groups
    from smtcoll.synth.exact.spread import spread_allreduce

    lo, hi = scaled.bounds.aim_steps(), len(scaled.schedule.steps)
    if 2 * hi > 3 * lo:  # first the spread (about a second; mi250 x 9: 6 steps, the lift's search took 9 CPU s)
        t0, c0 = time.monotonic(), time.process_time()
        with _exact_search(request) as clock:
            spread, spent = spread_allreduce(topo, coll, hi, clock.deadline)
        if spread is not None and 2 * len(spread.steps) <= 3 * lo:
            return _shaped(spread, "spread, then recursive doubling in groups", scaled, t0, c0, [], spent)
    lifted = _lifted_sums(topo, coll, request, scaled)
    hi = len(scaled.schedule.steps) if lifted is None or lifted.schedule is None else len(lifted.schedule.steps)
    if 2 * hi <= 3 * lo:  # the engine or the lift is within 1.5x of the aim (nvl36 x 4: 7 for 5, 1.2 CPU s saved)
        return lifted
    d = deadline()
    if d is not None and d.passed():  # its own budget bounds it, but --timeout has already run out
        d.searches += 1
        return lifted
    t0, c0 = time.monotonic(), time.process_time()
    found = rail_groups(topo, coll, hi)
    if found is None:
        return lifted
    return _shaped(found, "rail groups, then intervals of blocks", scaled, t0, c0, [], 0)


def _lifted_sums(topo: Topology, coll: Collective, request: SynthRequest, scaled: Scaled) -> SynthResult | None:
    """Where the symmetric search is too large for the machine, or found nothing: the search on its first m nodes
    and the schedule lifted (synth/scale/lift.py). Two copies (m = n / 2): one exchange with the twin inserted,
    one step more (nvl36 x 4: 6 on 2 nodes, 7, where the engine has 9). k >= 3 groups of m nodes: windows of
    groups across the NICs, ceil(log2 k) steps more (mi250 x 9 / x 12: 4 on 3 nodes, 6, the engine 7). Only where
    the engine is above 1.5x of the bound (issue 24's target): elsewhere the search's CPU would buy little.
    The divisors m smallest first (the cheaper search), until one lifts to 1.5x the bound; the fewest steps
    found kept. None where none applies, the searches find nothing or nothing lifted beats the engine."""
    from smtcoll.synth.scale import lift

    lo, hi = scaled.bounds.aim_steps(), len(scaled.schedule.steps)
    n = lift.node_count(topo)
    if 2 * hi <= 3 * lo or n is None:
        return None
    tried = []
    for m in (m for m in range(2, n // 2 + 1) if n % m == 0):  # the smaller searches first
        rounds = lift.group_rounds(topo, m)
        extra = 1 if 2 * m == n else hi if rounds is None else len(rounds)  # two copies: one exchange
        sub = lift.sub_machine(topo, m)
        if sub is None or hi - 1 - extra < 3:  # the m-node search answers at 1.5x its bound (2 or more) at best
            continue
        search = _sub_search(sub, lift.half_collective(coll, sub.ranks), request, hi - extra,
                             (lambda s: lift.insertions_checked(topo, s)) if 2 * m == n else None)
        if search is not None:
            tried.append((len(search[0].steps) + extra, m, search))
            if len(search[0].steps) + extra <= 3 * lo // 2:
                break
    for _, m, (base, t0, c0, attempts, spent) in sorted(tried, key=lambda x: x[:2]):
        lifted = lift.lift_nodes(topo, coll, base) if 2 * m == n else lift.lift_groups(topo, coll, base)
        if lifted is not None and len(lifted.steps) < hi:
            name = "half the nodes" if 2 * m == n else f"{m} nodes, windows of groups"
            return _shaped(lifted, f"symmetric sums on {name}, lifted", scaled, t0, c0, attempts, spent)
    return None


def _sub_search(sub: Topology, coll: Collective, request: SynthRequest, cap: int,
                lifts: Callable[[int], bool] | None) -> tuple[Schedule, float, float, list[tuple[int, str, float, int]],
                                                               int] | None:
    """The symmetric search on the machine `sub` of the first m nodes for fewer than `cap` steps, where it is
    small enough: its schedule, when it started (wall, CPU), what it tried and the units spent; None otherwise.
    `lifts` (two copies, session 14): from the bound up to cap - 1 with SUMS_WORK, where a schedule of the
    bound's steps would be lifted at all (sw2x3 x 6: 5^3 combinations of insertion rounds, none tried: 2.3 CPU s
    of search saved); else (groups) only 1.5x the bound, with SUMS_WORK_OVER (mi250 x 3's 4 steps: 52.8 M
    units). Where fewer than 1.5x the bound must be found, from the bound up with QUERY_WORK (session 22)."""
    from smtcoll.bounds import search_bounds
    from smtcoll.synth.exact.sums import MAX_SIZE, SUMS_WORK, SUMS_WORK_OVER, groups, size, sums_schedule

    sub_groups = groups(sub, coll)
    if not sub_groups:
        return None
    least = search_bounds(sub, coll).aim_steps()
    # the search on m nodes answers most often at 1.5x its bound (its first count); where the lift must find
    # fewer to beat the engine, from the bound up with one question's share only (held-out cube8 x 6: 3 on 3
    # nodes, its bound, in 3.6 M units, lifted to 4 where the engine has 5; mi250 x 4, 5 for 3: the 2-node
    # search would have to find 3 and spends the share for nothing, 0.3 CPU s)
    target = 3 * least // 2
    whole = lifts is not None
    if cap - 1 < least or (lifts is not None and not lifts(least)):
        return None
    near = target > cap - 1 or (whole and 2 * (cap - 1) < 3 * least)
    first, last = (least, cap - 1) if whole or near else (target, target)
    if min(size(sub, g, last) for g in sub_groups) > MAX_SIZE:
        return None
    t0, c0 = time.monotonic(), time.process_time()
    with _exact_search(request) as clock:
        work = (QUERY_WORK if near else SUMS_WORK if whole else SUMS_WORK_OVER) if request.limits.work is None \
            else clock.work_left()
        found, spent, tried = sums_schedule(sub, coll, first, last + 1, work, clock.deadline)
    return None if found is None else (found, t0, c0, tried, spent)


def _shaped(found: Schedule, name: str, scaled: Scaled, t0: float, c0: float,
            tried: list[tuple[int, str, float, int]], spent: int) -> SynthResult:
    from smtcoll.synth.checked import checked
    from smtcoll.synth.scale.engine import Scaled as Shaped

    result = scaled_result(Shaped(checked(found, name), f"{name} search", scaled.bounds), 1, t0, c0)
    attempts = [Attempt(s, s, 1, verdict, secs, name) for s, verdict, secs, _ in tried]
    return attrs.evolve(result, attempts=attempts, method=f"exact: {name}", work=spent)


def _exact_cannot_improve(topo: Topology, coll: Collective, request: SynthRequest, scaled: Scaled) -> str:
    """Why `auto` leaves the engine's schedule as the answer ("" when the exact search may improve it)."""
    if request.method == "exact":
        return ""
    if topo.ranks > AUTO_EXACT_UP_TO:
        return f"the exact search is not tried above {AUTO_EXACT_UP_TO} ranks (--method exact forces it)"
    steps = max(1, len(scaled.schedule.steps) - 1)  # the largest encoding it would build
    split = coll.with_chunks(request.chunks) if request.chunks != 1 else coll
    # a value every rank needs (Allreduce) prunes no send by the distance to its readers, so each count's
    # encoding holds every contribution literal; a Reduce's cone toward its root keeps the first counts small
    # (torus2d:4x4 Reduce at 8 chunks: 5 steps found in 1.1 CPU s where the engine has 11)
    readers: dict[int, set[int]] = {}
    for r, c in split.post:
        readers.setdefault(split.address[c], set()).add(r)
    spread = split.is_combining and min(map(len, readers.values()), default=0) == topo.ranks
    n = limits.encoding_variables(steps, steps, topo.ranks, len(topo.links), split.chunks, len(split.addresses),
                                  spread)
    if n > AUTO_EXACT_VARIABLES:
        return (f"the exact search is not tried: its encoding of {steps} steps (about {n} variables) is beyond "
                f"what it answers within its budget (--method exact forces it)")
    return ""


# --- the engine ----------------------------------------------------------------------------------

def engine_result(topo: Topology, base: Collective, chunks: int) -> tuple[SynthResult, Scaled | None]:
    """The engine's schedule as a least-steps result, with its gap to the bound (optimal at the bound)."""
    from smtcoll.synth.scale.engine import NoSchedule
    from smtcoll.synth.scale.engine import synthesize as engine

    t0, c0 = time.monotonic(), time.process_time()
    coll = base.with_chunks(chunks)
    try:
        scaled = engine(topo, coll)
    except NoSchedule as e:
        from smtcoll.bounds import search_bounds

        lb = LowerBound.of(search_bounds(topo, coll), True, chunks)
        return SynthResult("infeasible", None, "least-steps", lb, [],
                           message=f"proved: {e}", seconds=time.monotonic() - t0, method="scale"), None
    return scaled_result(scaled, chunks, t0, c0), scaled


def scaled_result(scaled: Scaled, chunks: int, t0: float, c0: float) -> SynthResult:
    """A checked schedule as a least-steps result with its gap to the bounds (optimal at the bound);
    t0, c0: when its synthesis started (wall clock, CPU)."""
    s, b = scaled.schedule, scaled.bounds
    gap = Gap(scaled.method, len(s.steps), s.rounds, b.least_steps(True, chunks), b.rounds(chunks))
    at_bound = len(s.steps) <= b.least_steps(True, chunks) and s.rounds == len(s.steps)
    optimal = (Optimality.optimum(len(s.steps), f"lower bound: {b.steps_why(True, chunks)}") if at_bound
               else Optimality.between(b.least_steps(True, chunks), len(s.steps)))
    message = "" if at_bound else (f"{gap.gap_steps} step(s) above the lower bound "
                                   f"({gap.steps} vs {gap.steps_bound}), "
                                   f"{gap.gap_rounds} round(s) above ({gap.rounds} vs {gap.rounds_bound})")
    attempt = Attempt(len(s.steps), s.rounds, chunks, "sat", time.process_time() - c0, "scale")
    # the claim optimality rests on (one step fewer is impossible), for --prove, as the exact search has
    below = len(s.steps) - 1
    pruned = [Point(below, None, chunks, "infeasible", f"bound: {b.steps_why(True, chunks)}", claim=(below, below))
              ] if at_bound and below >= 1 else []
    return SynthResult("found", s, "least-steps", LowerBound.of(b, True, chunks), [attempt],
                       [Point(len(s.steps), s.rounds, chunks, "found", schedule=s)], pruned, optimal=optimal,
                       message=message, seconds=time.monotonic() - t0, method=f"scale: {scaled.method}",
                       gap=gap)


def construction_result(topo: Topology, base: Collective, method: str) -> SynthResult:
    """`--method NAME` of a throughput construction (smtcoll.synth.constructions.METHODS): its checked
    schedule, with the bounds at the chunk factor it chose."""
    from smtcoll.bounds import search_bounds
    from smtcoll.synth.constructions import build

    t0, c0 = time.monotonic(), time.process_time()
    s = build(method, topo, base)
    c = s.collective.chunk_factor
    attempt = Attempt(len(s.steps), s.rounds, c, "sat", time.process_time() - c0, method)
    return SynthResult("found", s, "least-steps", LowerBound.of(search_bounds(topo, s.collective), True, c), [attempt],
                       [Point(len(s.steps), s.rounds, c, "found")], optimal=Optimality(proved=False),
                       seconds=time.monotonic() - t0, method=f"construction: {method}")


# --- pareto --------------------------------------------------------------------------------------

def _pareto(topo: Topology, coll: Collective, request: SynthRequest, progress: Progress | None) -> SynthResult:
    """The frontier of the exact search; `auto` and `scale` seed it with the engine's point, as the sweep
    does, so that an incomplete (or skipped) search still answers with a schedule."""
    seed: SynthResult | None = None
    why_not = ""
    if request.method != "exact":
        seed, scaled = engine_result(topo, coll, 1)
        if progress is not None and seed.attempts:
            progress(seed.attempts[0])
        if scaled is None:
            return attrs.evolve(seed, strategy="pareto")
        why_not = "the exact search is not run (--method scale)" if request.method == "scale" else \
            _exact_cannot_improve(topo, coll, request, scaled)
        if why_not:
            return _engine_frontier(seed, why_not)
    from smtcoll.synth.exact import strategies

    with _exact_search(request) as clock:
        exact = strategies.pareto(topo, coll, request.max_chunks, request.max_steps, None, progress, clock=clock)
    exact = attrs.evolve(exact, work=clock.spent)
    if seed is None or exact.status != "timeout" or seed.schedule is None:
        return exact
    # an incomplete frontier: the engine's point joins it unless a point found dominates it
    e = seed.points[0]
    if any(p.steps <= e.steps and Fraction(p.rounds or 0, p.chunks) <= Fraction(e.rounds or 0, e.chunks)
           for p in exact.points):
        return exact
    points = sorted((*exact.points, e), key=lambda p: (p.steps, Fraction(p.rounds or 0, p.chunks)))
    return attrs.evolve(exact, points=points, schedule=exact.schedule or seed.schedule,
                        attempts=(*seed.attempts, *exact.attempts),
                        message=f"{exact.message}; the engine's point ({e.steps}, {e.rounds}, {e.chunks}) joins it",
                        optimal=attrs.evolve(exact.optimal, frontier=[(p.steps, p.rounds, p.chunks) for p in points]))


def _engine_frontier(seed: SynthResult, why: str) -> SynthResult:
    """The engine's point as a frontier of one, not proved complete."""
    p = seed.points[0]
    return attrs.evolve(seed, strategy="pareto", pruned=(),
                        optimal=Optimality.of_frontier([p], False),
                        message=f"{seed.message + '; ' if seed.message else ''}the frontier is the engine's point, "
                                f"not proved complete: {why}")


# --- the answer ----------------------------------------------------------------------------------

def _answered(result: SynthResult, request: SynthRequest) -> SynthResult:
    """A limit the user did not set (the default work budget or memory cap) that stopped the exact
    search after it had a schedule is not a failure: the schedule is the answer, with its gap (exit 0)."""
    if result.status != "timeout" or result.schedule is None or request.method != "auto" \
            or request.limits.given(result.stopped_by):
        return result
    what = {"budget": "its default work budget", "memory": "the default memory cap"}.get(result.stopped_by,
                                                                                        result.stopped_by)
    return attrs.evolve(result, status="found",
                        message=f"{result.message} (the exact search stopped at {what}; the best schedule known is "
                                "the answer, not proved optimal)")
