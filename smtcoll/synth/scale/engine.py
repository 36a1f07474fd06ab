"""The large-instance engine: a checked schedule for any collective on any connected topology, fast.

Which method (docs/synth.md):
- non-combining collectives: the translate construction where the topology is a ring, torus,
  hypercube or fully connected and the collective is Allgather- or Alltoall-shaped; on switch domains
  (every pair a link, switch groups at the ports) the Latin square of `direct`; for Alltoall-shaped
  ones the LP-routed paths of `routing` (any topology), then, on machines a translation group maps
  onto themselves (a100 x N), rank 0's routes timed by the integer program of `orbit` (the LP routing takes
  any unicast collective: Gather and Scatter too), and where NICs
  join every pair of GPUs of two nodes (mi250 x N) the Latin square of `direct`;
  Allgather-shaped ones on machines of several nodes, on those a translation group maps onto themselves
  (a100 x N) rank 0's broadcast trees of `orbit_allgather`, the node rings fed by the NICs of `hierarchy`
  and the per-rank assignments of `matching`; otherwise, or when these miss the bound, the greedy
  (`synth/greedy.py`) in its link-by-link order, and for up to 32 ranks also in its farthest-first
  order, the best schedule kept; Scatter-shaped ones that miss the bound also as the time-reversal of
  their Gather-shaped mirror (`mirror`); multicast ones (Allgather) still above the bound, where `matching`
  did not answer, the most deliveries per round of `round_deliveries` (an LP or integer program a round);
- ReduceScatter, Reduce (combining, with a non-combining dual): the reversal of a tree-shaped schedule
  of the dual on the reversed topology (every method above gives each rank each chunk once);
- Allreduce: on hypercubes with one address, recursive doubling; otherwise the fewest steps of: reduce
  each address to one rank (ReduceScatter when the addresses split evenly over the ranks, else the most
  central ranks) through the dual, then broadcast it (Allgather-shaped when split evenly); and, with one
  address, the overlapping constructions of `allreduce` (recursive doubling over xor partners where
  those are links, four or two arcs or one or two junctions per cycle on rings and tori) and, on machines of several
  nodes, the node sums exchanged over the NICs of `nodes_allreduce` (to receivers, or by recursive doubling
  over the nodes) and the windows of consecutive nodes of `windows_allreduce` (any node count), one lane per
  shared NIC in `lanes_allreduce`; and
  recursive doubling with the ranks above a power of two folded in and out (switch domains); and the
  squares of `diagonal_allreduce` (2^j nodes of GPU squares, mi250).
Every schedule is checked by `smtcoll.check` before it is returned; a rejected one is an internal error.
"""

from __future__ import annotations

import attrs

from smtcoll.bounds import SearchBounds, search_bounds
from smtcoll.bounds.reach import Tables
from smtcoll.check.schedule import check_schedule
from smtcoll.errors import SmtcollError
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.checked import checked
from smtcoll.synth.combining import dual_collective, reverse_schedule
from smtcoll.synth.greedy import greedy_schedule
from smtcoll.synth.scale import (
    allreduce,
    diagonal_allreduce,
    direct,
    hierarchy,
    lanes_allreduce,
    matching,
    mirror,
    nodes_allreduce,
    orbit,
    orbit_allgather,
    round_deliveries,
    routing,
    translate,
    windows_allreduce,
)

GREEDY_WORK = 5_000_000  # deliveries x steps, a few seconds of the greedy in its `links` order
FARTHEST_UP_TO = 32  # ranks: the greedy's `farthest` order (one sort of all the step's candidates) also runs


class NoSchedule(SmtcollError):
    """Some rank cannot be reached: no schedule exists (the bounds say so too)."""

    exit_code = 1


@attrs.frozen
class Scaled:
    schedule: Schedule
    method: str
    bounds: SearchBounds

    def to_json(self) -> dict:
        """Steps and rounds next to their bounds: the gap is what the schedule may lose."""
        s, b, c = self.schedule, self.bounds, self.schedule.collective.chunk_factor
        return {"method": self.method, "steps": len(s.steps), "rounds": s.rounds,
                "steps_bound": b.least_steps(True, c), "rounds_bound": b.rounds(c),
                "gap_steps": len(s.steps) - b.least_steps(True, c), "gap_rounds": s.rounds - b.rounds(c)}


def synthesize(topo: Topology, coll: Collective) -> Scaled:
    """A checked schedule for `coll` (already split in its chunk factor) on `topo`, and its method."""
    b = search_bounds(topo, coll)
    if b.steps.value is None:
        raise NoSchedule(f"no schedule exists: {b.steps.note}")
    sched, method = _any(topo, coll, b)
    return Scaled(checked(sched, method), method, b)


def _any(topo: Topology, coll: Collective, b: SearchBounds | None = None) -> tuple[Schedule, str]:
    if not coll.is_combining:
        return _plain(topo, coll, b)
    dual = dual_collective(coll)
    if dual is not None:
        return _reduction(topo, coll, dual, b)
    return _allreduce(topo, coll, b)


def _out_of_time(found: list[tuple[Schedule, str]]) -> bool:
    """The --timeout has passed and a schedule is known: the remaining methods are not tried (counted,
    so that the result says it was cut short)."""
    from smtcoll.bounds.lp import deadline

    d = deadline()
    if found and d is not None and d.passed():
        d.skipped += 1
        return True
    return False


def _plain(topo: Topology, coll: Collective, b: SearchBounds | None, mirror_ok: bool = True
           ) -> tuple[Schedule, str]:
    target = b.least_steps(True, coll.chunk_factor) if b is not None else 0
    found: list[tuple[Schedule, str]] = []
    t = translate.translate_schedule(topo, coll)
    if t is not None:
        found.append(t)
        if len(t[0].steps) <= target:
            return t
    limit = 4 * topo.ranks * coll.chunks + 8
    # switch domains (every pair a link, switch groups at the ports): the Latin square of `direct`, at the
    # port bound where a port carries one chunk per round (nvl72: 71 steps; the greedy found 88)
    s = direct.switch_direct(topo, coll, limit)
    if s is not None:
        found.append((s, "straight through the switch (a Latin square: rank r to r + k in round k)"))
        if len(s.steps) <= target:
            return found[-1]
    # Allgather on machines of nodes a translation maps onto themselves (a100 x N): rank 0's trees
    a = orbit_allgather.orbit_allgather(topo, coll, limit)
    if a is not None:
        found.append((a, "one rank's broadcast trees within the orbit capacities, translated to every rank"))
        if len(a.steps) <= target:
            return found[-1]
    # machines whose NICs join every pair of GPUs of two nodes (mi250 x N): a Latin square over the NICs,
    # the engine's one-node schedule inside the nodes in the same rounds. Where the routing LP must be
    # reduced by symmetry (many nodes) it is tried first: at the entry bound where it applies, 10x cheaper
    def straight() -> bool:
        d = direct.direct_alltoall(topo, coll, limit, lambda t, c: _plain(t, c, search_bounds(t, c))[0])
        if d is not None:
            found.append((d, "straight over the NICs (a Latin square), the node's own Alltoall alongside"))
        return d is not None and len(d.steps) <= target

    direct_first = not routing.full_lp_fits(topo)
    if direct_first and straight():
        return found[-1]
    r = routing.routed_unicast(topo, coll, limit)
    if r is not None:
        found.append((r, "LP-routed paths (HiGHS), store and forward"))
        if len(r.steps) <= target:
            return found[-1]
    # machines a translation maps onto themselves (a100 x N): rank 0's routes timed by an integer program
    shortest = min((len(s.steps) for s, _ in found), default=limit + 1)
    o = orbit.orbit_alltoall(topo, coll, target, min(limit, shortest - 1))
    if o is not None:
        found.append((o, "one rank's routes timed by an integer program (HiGHS), translated to every rank"))
        if len(o.steps) <= target:
            return found[-1]
    if not direct_first and straight():
        return found[-1]
    # machines of several nodes: the conveyor rings fed by the NICs, then with the other links too
    # (the NICs matched per round keep every NIC busy where a first fit idles one: ndv2 x 5..7)
    for fill, nics in ((False, False), (True, False), (True, True)):
        h = hierarchy.ring_allgather(topo, coll, limit, fill, nics)
        if h is not None:
            found.append((h, "node rings fed by the NICs" + (", other links filled" if fill else "")
                          + (", NICs matched per round" if nics else "")))
            if len(h.steps) <= target:
                return found[-1]
    if _out_of_time(found):
        return min(found, key=lambda x: (len(x[0].steps), x[0].rounds))
    # ... and every link full each round, the rarest chunks first (wide links inside a node: MI250)
    m = matching.matched_allgather(topo, coll, limit)
    if m is not None:
        found.append((m, "every link full per round, rarest first (assignment per rank)"))
        if len(m.steps) <= target:
            return found[-1]
    # Scatter-shaped: the time-reversal of its Gather-shaped mirror, before the greedy (whose forward run
    # it usually beats: torus2d:32x32 256 steps, the bound, against 467; the greedy is then skipped)
    if mirror_ok and mirror.scatter_shaped(coll):
        mi = mirror.mirrored(topo, coll, lambda t, c: _plain(t, c, None, mirror_ok=False))
        if mi is not None and check_schedule(mi[0]).verdict == "ok":
            found.append(mi)
            if len(mi[0].steps) <= target:
                return mi
    # the greedy's work is about (rank, chunk) deliveries x steps: where another method has answered and that
    # exceeds the budget, its answer stands (ring:100 Alltoall: 9,900 x 1,275, minutes of greedy for nothing)
    if _out_of_time(found):
        return min(found, key=lambda x: (len(x[0].steps), x[0].rounds))
    best = min((len(s.steps) for s, _ in found), default=None)
    if best is None or len(coll.post) * best <= GREEDY_WORK:
        g = greedy_schedule(topo, coll, limit, order="links")
        if g is not None:
            found.append((g, "greedy (link-chunk matching per step)"))
    if topo.ranks <= FARTHEST_UP_TO:
        o = greedy_schedule(topo, coll, limit, order="farthest")
        if o is not None:
            found.append((o, "greedy (farthest-first, per chunk)"))
    # multicast where every method above missed the bound: each round the most deliveries the links and switch
    # groups allow together, by an integer program (nvl36 x 2 Allgather: 48 rounds, the set-cut bound; the greedy
    # 56, the node rings 70); only a schedule shorter than the best is wanted, so it stops once it cannot be one.
    # Not where the per-rank assignments answered: links outside every switch group, wide inside a node, are
    # theirs (mi250 x 4: 13 steps here against their 10, 0.6 CPU s for nothing); and only with a bound to miss
    # (an Allreduce's phases come without; a reduction's dual has the reduction's, `_reduction`)
    best = min((len(s.steps) for s, _ in found), default=limit + 1)
    multicast = not mirror.scatter_shaped(coll) and routing.unicast_pairs(coll) is None
    if b is not None and best > target and m is None and mirror_ok and multicast:
        d = round_deliveries.round_deliveries(topo, coll, min(limit, best - 1), target)
        if d is not None:
            found.append((d, "the most deliveries per round (an integer program over links and switch groups, HiGHS)"))
            best = len(d.steps)
        # then with the NICs carrying only chunks their node lacks, where that can still do better (switch nodes
        # with one shared NIC: pcie8 x 5 35, the bound, where the first gave 42)
        if best > target and topo.node_count > 1:
            d = round_deliveries.round_deliveries(topo, coll, min(limit, best - 1), target, imports=True)
            if d is not None:
                found.append((d, "the most deliveries per round, the NICs bringing what their node lacks (an "
                                 "integer program over links and switch groups, HiGHS)"))
    # and with the NICs' sends fixed in advance, each sending its GPUs' own chunks to every other node in turn, also
    # where the per-rank assignments answered (quad4 x 5: 9, the bound, where they and the above give 10; 0.15 s)
    best = min((len(s.steps) for s, _ in found), default=limit + 1)
    plan = round_deliveries.nic_plan(topo, coll) if b is not None and best > target and mirror_ok and multicast \
        else None
    if plan is not None:
        d = round_deliveries.round_deliveries(topo, coll, min(limit, best - 1), target, plan=plan)
        if d is not None and check_schedule(d).verdict == "ok":
            found.append((d, "the NICs' own chunks to every other node in turn, the most deliveries per round inside "
                             "the nodes (an integer program over links and switch groups, HiGHS)"))
    if not found:
        raise NoSchedule("no method reached every rank that needs a chunk")
    return min(found, key=lambda x: (len(x[0].steps), x[0].rounds))


def _reduction(topo: Topology, coll: Collective, dual: tuple[Collective, tuple[int, ...]],
               b: SearchBounds | None = None) -> tuple[Schedule, str]:
    """A reduction as the time-reversal of a tree-shaped broadcast of its dual on the reversed topology. `b`: the
    reduction's bounds, where it is the whole collective (its steps are the dual's): the dual's methods then
    know their target and the most deliveries per round runs where they miss it (session 22: held-out pcie8 x 4
    ReduceScatter 33 -> 28, the bound; dualplane8 x 3 14 -> 11); an Allreduce's reduce phase passes none."""
    dcoll, addresses = dual
    sched, method = _plain(topo.reversed(), dcoll, b)
    return reverse_schedule(sched, topo, coll, addresses), f"dual of {method}"


def _allreduce(topo: Topology, coll: Collective, b: SearchBounds | None = None) -> tuple[Schedule, str]:
    doubling = _recursive_doubling(topo, coll)
    if doubling is not None:
        return doubling, "recursive doubling (hypercube)"
    # the overlapping constructions (one address): kept when the checker accepts them and they beat
    # the phases (a construction whose as-soon-as-possible order breaks its data flow is dropped)
    found = []
    for make, method in ((allreduce.doubling_allreduce, "recursive doubling (xor partners)"),
                         (allreduce.torus_allreduce,
                          "arcs per cycle (four, two, one or two junctions), overlapping (ring, torus)"),
                         (nodes_allreduce.nodes_allreduce, "node sums, across the NICs, then copies inside"),
                         (nodes_allreduce.doubling_nodes_allreduce,
                          "node sums, recursive doubling over the nodes through one NIC pair, then copies inside"),
                         (windows_allreduce.windows_allreduce,
                          "node sums, windows of nodes across every NIC at once, then copies inside"),
                         (lanes_allreduce.lanes_allreduce,
                          "node sums, windows of nodes over one lane per shared NIC, then copies inside"),
                         (allreduce.folded_doubling_allreduce,
                          "recursive doubling, the ranks above a power of two folded in and out"),
                         (diagonal_allreduce.diagonal_allreduce,
                          "squares' sides and the diagonal across a NIC, then windows doubled across the NICs")):
        s = make(topo, coll)
        if s is not None and check_schedule(s).verdict == "ok":
            found.append((s, method))
    # with one address the phases reduce to one rank and broadcast from it: at least twice its eccentricity,
    # so at least twice the radius; not built where a construction is already shorter (the greedy's two
    # phases are most of the time at 1024 ranks: ring:1024 9 of 12 CPU s)
    shortest = min((len(s.steps) for s, _ in found), default=None)
    if shortest is None or len(coll.addresses) != 1 or shortest >= 2 * _radius(topo):
        phases = _phases(topo, coll, None if shortest is None or len(coll.addresses) != 1 else shortest,
                         None if b is None else b.tables)
        if phases is not None:
            found.insert(0, phases)
    return min(found, key=lambda x: (len(x[0].steps), x[0].rounds))


def _radius(topo: Topology) -> int:
    return min(max(topo.distances[r].values(), default=0) for r in range(topo.ranks))


def _phases(topo: Topology, coll: Collective, beat: int | None = None, tables: Tables | None = None,
            ) -> tuple[Schedule, str] | None:
    """Reduce, then broadcast. `beat`: None (the reduce not built) where the broadcast's steps and the
    reduce's least exceed it; equal, the phases would win the tie (mi250 x 16: 12 steps against the
    constructions' 7, the greedy reduce 2/3 of its 4.8 CPU s). The reduce's least: the farthest rank's hops to
    the root, or, with `tables` (the reach recursion of the bounds), the rounds before the root may hold every
    contribution; on a topology that is its own reverse the broadcast needs as many (its time-reversal is
    such a reduce), so where twice that exceeds `beat` neither phase is built (mi250 x 9 / x 12 / x 16: 2 x 4
    or 2 x 5 against 7; the broadcast alone 0.6-1.5 CPU s). That bound counts rounds; it bounds the phases'
    steps because `_plain` moves one address in steps of one round each (a link carries the value once; a
    step of several rounds would only let a NIC send it to several ranks: tested, tests/bounds/test_reach.py)."""
    addrs = coll.addresses
    p = topo.ranks
    if len(addrs) % p == 0:
        per = len(addrs) // p
        dest = {a: i // per for i, a in enumerate(addrs)}
        shape = "reducescatter + allgather"
    else:
        central = sorted(range(p), key=lambda r: (max(topo.distances[r].values()), r))
        dest = {a: central[i % p] for i, a in enumerate(addrs)}
        shape = "reduce + broadcast"
    least = 0
    if beat is not None:  # one address: every contribution must reach the root, the farthest d hops away
        root = dest[addrs[0]]
        least = max(topo.distances[r].get(root, 0) for r in range(p))
        if tables is not None:
            least = max(least, tables.gathered(root))
            if 2 * least > beat and _own_reverse(topo):
                return None
    post = [(dest[coll.address[c]], c) for c in range(coll.chunks)]
    reduce = Collective(f"{coll.name}-reduce", p, coll.chunks, coll.pre, post, coll.address,
                        chunk_factor=coll.chunk_factor)
    dual = dual_collective(reduce)
    if dual is None:
        raise NoSchedule(f"{coll.name}: a contribution starts at several ranks; no reduce phase applies")
    bcast = Collective(f"{coll.name}-broadcast", p, len(addrs), [(dest[a], i) for i, a in enumerate(addrs)],
                       [(r, i) for i, a in enumerate(addrs) for r in range(p)
                        if any(coll.address[c] == a for c in coll.post_sets[r])],
                       addrs, chunk_factor=coll.chunk_factor)
    second, m2 = _plain(topo, bcast, None)
    if beat is not None and len(second.steps) + least > beat:
        return None
    first, m1 = _reduction(topo, reduce, dual)
    return Schedule(topo, coll, [*first.steps, *second.steps]), f"{shape}: {m1}; then {m2}"


def _own_reverse(topo: Topology) -> bool:
    """Whether every link and switch group of `topo` has its reverse, of the same bandwidth."""
    links = {(l.src, l.dst, l.bandwidth) for l in topo.links}
    groups = {(frozenset(g.srcs), frozenset(g.dsts), g.bandwidth) for g in topo.switches}
    return all((v, u, w) in links for u, v, w in links) and all((d, s, w) in groups for s, d, w in groups)


def _recursive_doubling(topo: Topology, coll: Collective) -> Schedule | None:
    """On a hypercube, every rank exchanges its partial sums with its neighbour across dimension i at
    step i: after step i it holds the sum of its 2^(i+1)-rank subcube, disjoint from the neighbour's."""
    g = translate.group_of(topo)
    if g is None or set(g.dims) != {2} or len(g.directions) != len(g.dims):
        return None
    every = all(len(coll.post_sets[r]) == coll.chunks for r in range(coll.ranks))
    own = [len(s) for s in coll.pre_sets]
    if not every or len(coll.pre) != coll.chunks or min(own) < 1:
        return None
    rounds = max(1, len(coll.addresses) // min(g.bandwidth))
    steps = []
    for d in g.directions:
        dr = g.rank(d)
        steps.append(Step(rounds, sorted(Send(a, r, r ^ dr) for r in range(topo.ranks) for a in coll.addresses)))
    return Schedule(topo, coll, steps)
