"""A periodic `lanes` (issue 23, docs/benchmarks.md "dgx2 x2 Allreduce (session 9)"): an experiment, not a
construction the sweep uses. It times, in the sweep's model, the Allreduce of `lanes` (two switch nodes whose
NICs are not one per GPU each way) with even port loads: a sender-collector gets one share already added into
a helper's (a lane receiver's), the broadcasts' receivers split so that every port sends and receives 2(p - 1)
transfers per piece, and the steps in one of two orders:

- `slots`: period by period, piece t's stage k in period t + k (detour, shares, NIC partial, broadcast, relays,
  NIC back, far broadcast, far relays), each period's port transfers of a node properly edge-coloured
  (König: as many colours as the most transfers at one port) and one step per colour;
- `pieces`: piece by piece, stage by stage. With `--trees exact` every ordered pair of a node then carries one
  share and one broadcast per piece in turn, so the lowering's round-robin over a connection's two channels
  (lower/spread.py) gives the shares one channel and the broadcasts the other: two independent queues.

`--trees split`: each broadcast from its origin to half the node and through one mate to the other half (as
`lanes`, the split alternated so that egress is even); `exact`: trees of depth two in which every ordered pair
carries exactly one broadcast per piece (the detour's pairs two and none), found by a seeded search.

    python benchmarks/lanes_periodic.py [--machines dgx2:2,...] [--order pieces|slots] [--trees exact|split]
        [--sizes 268435456,1073741824] [--instances 1,2] [--pieces 32] [--tail N] [--lag L] [--shifted]
        [--profile WINDOWS]

`--order lanes` times the shipped `lanes` the same way (the baseline).

Each schedule is checked by the checker before it is timed (`smtcoll.sweep.cost.schedule_time`, Simple),
against the sweep's bound (`model_bound`: the `/ bound` column of vs_nccl.py).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

import networkx as nx

from smtcoll import library, specs
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.sweep.cost import Model, bus_bandwidth, schedule_time
from smtcoll.sweep.tasks import model_bound
from smtcoll.synth.constructions import checked
from smtcoll.synth.constructions.common import NotApplicable, send_key
from smtcoll.synth.constructions.hier import across_nodes
from smtcoll.synth.constructions.lanes import MAX_SENDS_PER_RANK, OPS_PER_LINK, _lanes, lanes
from smtcoll.synth.constructions.pipeline import _rounds

# the stages of a piece: detour, shares, NIC partial, broadcast, relays, NIC back, far broadcast, far relays
DETOUR, SHARES, PARTIAL, NEAR1, NEAR2, BACK, FAR1, FAR2 = range(8)
STAGES = 8
SPACING = 4  # slots between two transfers on one connection at least (`slots`): a channel is a third of a port
Move = tuple[int, int, int]  # (address, src, dst)
Tree = tuple[int, bool, dict[int, int]]  # (origin, near, receiver -> the rank it receives from)


def periodic(topo: Topology, base: Collective, order: str, trees: str, pieces: int | None, tail: int = 0,
             lag: int | None = None, shifted: bool = False, graded: int = 0) -> Schedule:
    what, node, n, members = across_nodes(topo, base, "multi-rail exchange")
    if what != "allreduce" or n != 2:
        raise NotApplicable("an Allreduce across two nodes")
    local = {r: i for m in members for i, r in enumerate(m)}
    links = [_lanes(topo, node, x, 1 - x, local) for x in range(2)]
    blocks = [lane for x in range(2) for lane in links[x]]
    c = pieces or max(1, min(OPS_PER_LINK // 2, MAX_SENDS_PER_RANK // max(1, 2 * len(blocks))))
    # `graded` K: every piece of 2 chunks but the last K, of 1
    sizes = [2] * (c - graded) + [1] * graded if graded else None
    coll = base.with_chunks(len(blocks) * (sum(sizes) if sizes else c))
    stages = _stages(node, members, links, blocks, c, trees, tail, sizes)
    steps = _slots(node, stages, c) if order == "slots" else _pieces(topo, stages, c, lag, shifted)
    return Schedule(topo, coll, steps, name=f"lanes-{order}-{trees}")


def _pieces(topo: Topology, stages: list[list[Move]], c: int, lag: int | None = None,
            shifted: bool = False) -> list[Step]:
    """Piece by piece, stage by stage; a link carries one transfer per step. With `lag`: in groups of
    two pieces, each group's shares and partials (stages up to PARTIAL) and then the broadcasts (NEAR1
    on) of the group `lag` groups before: a connection's messages, dealt round-robin over its two
    channels, then alternate a share and a broadcast `2 lag` pieces older on each channel, so that the
    shares cannot run ahead of the broadcasts by more than that. `shifted`: a piece's shares in one step
    per shift (r to the rank k after it in its node in step k; a detour's helper last), so that each
    collector adds them in that order."""
    order: list[tuple[int, int]] = []
    if lag is None:
        order = [(t, k) for t in range(c) for k in range(STAGES)]
    else:
        for u in range(-(-c // 2) + lag):
            order += [(t, k) for k in range(PARTIAL + 1) for t in (2 * u, 2 * u + 1) if t < c]
            order += [(t, k) for k in range(NEAR1, STAGES) for t in (2 * (u - lag), 2 * (u - lag) + 1)
                      if 0 <= t < c]
    steps = []
    p = topo.ranks // 2
    for t, k in order:
        moves = stages[t * STAGES + k]
        if shifted and k == SHARES:
            # one step per shift (r to the rank k after it), the helpers' shares (a detour's) last
            helped = {(a, d) for a, _s, d in stages[t * STAGES + DETOUR]}
            shift = [((d % p - s % p) % p if (a, s) not in helped else p, (a, s, d)) for a, s, d in moves]
            groups = [[x for j, x in shift if j == i] for i in range(p + 1)]
        else:
            groups = [moves]
        for group in groups:
            sends = [Send(a, s, d) for a, s, d in group]
            while sends:
                seen: set[tuple[int, int]] = set()
                now: list[Send] = []
                later: list[Send] = []
                for x in sends:
                    (later if (x.src, x.dst) in seen else now).append(x)
                    seen.add((x.src, x.dst))
                steps.append(Step(_rounds(topo, now), sorted(now, key=send_key)))
                sends = later
    return steps


def _stages(node: Sequence[int], members: list[list[int]], lanes: list[list[tuple[int, int]]],
            blocks: list[tuple[int, int]], c: int, kind: str, tail: int = 0, graded: list[int] | None = None
            ) -> list[list[Move]]:
    """Per (piece, stage), index piece * STAGES + stage: its transfers. The last `tail` pieces cross the
    NIC once each way as partials (the drain: one NIC hop after the shares instead of two): in node x the
    collector s sums every share but bg's (the lane back's receiver), swaps with bg (bg gets that sum, s
    gets bg's share) and sends node x's sum over its lane to g; in node y the lane back's sender bs does
    the same with g; g and bg then hold the full sum and broadcast it in their node (the same trees).
    `graded`: the chunks of each piece (every chunk of a piece moves with the same dependencies; the last
    pieces smaller shorten the last piece's path), one each by default."""
    p = len(members[0])
    receivers = {g for _, g in blocks}
    back: list[tuple[int, int]] = []  # the lane back of each block: rotating over the receiving node's lanes
    turn = [0, 0]
    for _s, g in blocks:
        y = node[g]
        back.append(lanes[y][turn[y] % len(lanes[y])])
        turn[y] += 1
    far_mate: list[int] = []  # the far broadcast's mate (`split`): rotating over the ranks that start none
    mturn = [0, 0]
    for b in range(len(blocks)):
        x = node[back[b][1]]
        pool = [r for r in members[x] if r not in receivers]
        far_mate.append(pool[mturn[x] % len(pool)])
        mturn[x] += 1
    # detours: a collector that is a sender and no receiver gets one share through a helper (a receiver)
    detour: dict[int, tuple[int, int]] = {}  # block -> (r, helper): r's share goes r -> helper -> collector
    used: set[int] = set()
    for b, (s, _g) in enumerate(blocks):
        if s in receivers:
            continue
        m = members[node[s]]
        helpers = [h for h in m if h in receivers and h not in used]
        if not helpers:
            continue
        used.add(helpers[0])
        pos = m.index(s)
        r = next(m[(pos + k) % p] for k in range(1, p)
                 if m[(pos + k) % p] not in (s, helpers[0]) and m[(pos + k) % p] not in receivers)
        detour[b] = (r, helpers[0])
    if kind == "exact":
        trees = _exact(node, members, blocks, back, detour)
    else:
        roots = [[(g, back[b][0], True), (back[b][1], far_mate[b], False)] for b, (_s, g) in enumerate(blocks)]
        trees = [[(o, near, {mate: o, **dict.fromkeys(mine, o), **dict.fromkeys(rest, mate)})
                  for o, mate, near, mine, rest in row] for row in _split(node, members, roots)]
    sizes = graded or [1] * c  # chunks per piece
    first_address = [sum(sizes[:t]) for t in range(c)]
    cb = sum(sizes)
    out: list[list[Move]] = [[] for _ in range(c * STAGES)]
    for t in range(c):
        st = out[t * STAGES:(t + 1) * STAGES]
        for b, (s, g) in enumerate(blocks):
            for a in range(b * cb + first_address[t], b * cb + first_address[t] + sizes[t]):
                if t >= c - tail:
                    bs, bg = back[b]
                    # shares (stage 0) into s but bg's and into bs but g's; s and bg swap (stage 1: s sends
                    # what it held, the rest of the node, and receives bg's share), bs and g likewise; then
                    # both partials cross (stage 2): bg and g each end with the sum of both nodes
                    for coll, own in ((s, bg), (bs, g)):
                        st[DETOUR] += [(a, r, coll) for r in members[node[coll]] if r not in (coll, own)]
                        st[SHARES] += [(a, coll, own), (a, own, coll)]
                    st[PARTIAL] += [(a, s, g), (a, bs, bg)]
                    for origin, near, hops in trees[b]:
                        first, second = (NEAR1, NEAR2) if near else (FAR1, FAR2)
                        for v, u in sorted(hops.items()):
                            st[first if u == origin else second].append((a, u, v))
                    continue
                for coll in (s, g):
                    skip = detour.get(b) if coll == s else None
                    for r in members[node[coll]]:
                        if r != coll and not (skip and r == skip[0]):
                            st[SHARES].append((a, r, coll))
                    if skip:
                        st[DETOUR].append((a, skip[0], skip[1]))
                st[PARTIAL].append((a, s, g))
                for origin, near, hops in trees[b]:
                    first, second = (NEAR1, NEAR2) if near else (FAR1, FAR2)
                    for v, u in sorted(hops.items()):
                        st[first if u == origin else second].append((a, u, v))
                st[BACK].append((a, *back[b]))
    return out


def _exact(node: Sequence[int], members: list[list[int]], blocks: list[tuple[int, int]],
           back: list[tuple[int, int]], detour: dict[int, tuple[int, int]]
           ) -> list[list[tuple[int, bool, dict[int, int]]]]:
    """Broadcast trees of depth two in which every ordered pair of a node carries exactly one broadcast per
    piece (the detour's pairs: two from r to the collector, none from r to the helper). Each origin (a
    lane's receiver, the root of two broadcasts: its near one and the far one it receives over the NIC)
    sends straight to every other rank once, its two broadcasts splitting the node; the other ranks (the
    senders) relay each broadcast to the side that did not get it from the origin, one relay per receiver
    chosen by a matching, the partition drawn again (seeded) until every receiver's matching is perfect."""
    rng = random.Random(1)
    receivers = {g for _, g in blocks}
    near_of = {g: b for b, (_s, g) in enumerate(blocks)}
    far_of = {back[b][1]: b for b in range(len(blocks))}
    trees: list[list[tuple[int, bool, dict[int, int]]]] = [[] for _ in blocks]
    for m in members:
        evens = [r for r in m if r in receivers]
        odds = [r for r in m if r not in receivers]
        cap: dict[tuple[int, int], int] = {(u, v): 1 for u in odds for v in m if v != u}
        for b, (r, h) in detour.items():
            if r in cap or (r, h) in cap:
                cap[(r, h)] = 0
                cap[(r, blocks[b][0])] = 2
        for _attempt in range(2000):
            side: dict[int, tuple[set[int], set[int]]] = {}
            for e in evens:
                others = [v for v in m if v != e]
                rng.shuffle(others)
                half = len(others) // 2 + rng.randrange(2)
                side[e] = (set(others[:half]), set(others[half:]))
            relay: dict[tuple[int, int], int] = {}  # (origin, v) -> relay
            ok = True
            for v in m:
                g: nx.Graph = nx.Graph()
                need = []
                for e in evens:
                    if e == v:
                        continue
                    first = side[e][1] if v in side[e][0] else side[e][0]
                    need.append(e)
                    for u in odds:
                        if u != v and u in first:
                            for k in range(cap[(u, v)]):
                                g.add_edge(("b", e), ("u", u, k))
                top = [("b", e) for e in need]
                g.add_nodes_from(top)
                match = nx.bipartite.hopcroft_karp_matching(g, top_nodes=top)
                if any(t not in match for t in top):
                    ok = False
                    break
                for e in need:
                    relay[(e, v)] = match[("b", e)][1]
            if ok:
                break
        else:
            raise NotApplicable("no broadcast trees that load every pair of a node evenly were found")
        for e in evens:
            p_side, q_side = side[e]
            for block, first, second, near in ((near_of[e], p_side, q_side, True), (far_of[e], q_side, p_side, False)):
                hops = dict.fromkeys(first, e)
                hops.update({v: relay[(e, v)] for v in second})
                trees[block].append((e, near, hops))
    # each block: its near tree first, then the far one
    return [sorted(row, key=lambda t: not t[1]) for row in trees]


def _split(node: Sequence[int], members: list[list[int]], roots: list[list[tuple[int, int, bool]]]
           ) -> list[list[tuple[int, int, bool, list[int], list[int]]]]:
    """Each broadcast's receivers split between its origin and its mate (the origin serves (p - 2) / 2
    rounded up near, down far, so egress is even), chosen so that the node's ordered pairs carry a
    broadcast each as evenly as can be: a connection that carries only shares, which need nothing, would
    send them periods ahead of their slots and take the receiver's port from the broadcasts."""
    p = len(members[0])
    trees: list[list[tuple[int, int, bool, list[int], list[int]]]] = []
    mult: dict[tuple[int, int], int] = {}
    for rs in roots:
        row = []
        for origin, mate, near in rs:
            m = members[node[origin]]
            pos = m.index(origin)
            others = [m[(pos + k) % p] for k in range(1, p) if m[(pos + k) % p] not in (mate, origin)]
            k = (p - 2) // 2 if near else (p - 3) // 2
            mine, rest = others[:k], others[k:]
            for v in mine:
                mult[(origin, v)] = mult.get((origin, v), 0) + 1
            for v in rest:
                mult[(mate, v)] = mult.get((mate, v), 0) + 1
            row.append((origin, mate, near, mine, rest))
        trees.append(row)

    def gain(origin: int, mate: int, u: int, w: int) -> int:
        """The fall in the sum of squared pair counts when u moves to the mate and w to the origin."""
        before = {(origin, u): 0, (mate, w): 0, (mate, u): 0, (origin, w): 0}
        after = dict(before)
        for k in before:
            before[k] = after[k] = mult.get(k, 0)
        after[(origin, u)] -= 1
        after[(mate, w)] -= 1
        after[(mate, u)] += 1
        after[(origin, w)] += 1
        return sum(v * v for v in before.values()) - sum(v * v for v in after.values())

    improved = True
    while improved:
        improved = False
        for row in trees:
            for origin, mate, _near, mine, rest in row:
                for i, u in enumerate(mine):
                    for j, w in enumerate(rest):
                        if gain(origin, mate, u, w) > 0:
                            mine[i], rest[j] = w, u
                            for pair, d in (((origin, u), -1), ((mate, w), -1), ((mate, u), 1), ((origin, w), 1)):
                                mult[pair] = mult.get(pair, 0) + d
                            u = w
                            improved = True
    return trees


def _slots(node: Sequence[int], stages: list[list[Move]], c: int) -> list[Step]:
    """Period by period: the NIC transfers first, then the port transfers of each node in colour order."""
    steps: list[Step] = []
    recent: list[list[set[tuple[int, int]]]] = [[], []]  # per node, the connections of the last slots, newest last
    for period in range(c + STAGES - 1):
        moves = [x for k in range(STAGES) if 0 <= period - k < c for x in stages[(period - k) * STAGES + k]]
        nic = [x for x in moves if node[x[1]] != node[x[2]]]
        # a lane carries a partial (stage 2) and a sum back (stage 4): one per step
        nics: list[list[Move]] = []
        for x in nic:
            k = next(i for i, row in enumerate([*nics, []]) if all(y[1:] != x[1:] for y in row))
            if k == len(nics):
                nics.append([])
            nics[k].append(x)
        port = [x for x in moves if node[x[1]] == node[x[2]]]
        colours = [_spread(_colour([x for x in port if node[x[1]] == y]), recent[y]) for y in range(2)]
        width = max([len(nics), *(len(cs) for cs in colours)])
        for k in range(width):
            sends = [Send(a, s, d) for cs in colours if k < len(cs) for a, s, d in cs[k]]
            if k < len(nics):
                sends += [Send(a, s, d) for a, s, d in nics[k]]
            if sends:
                steps.append(Step(1, sorted(sends, key=send_key)))
    return steps


def _spread(colours: list[list[Move]], recent: list[set[tuple[int, int]]]) -> list[list[Move]]:
    """The colours in an order that keeps a connection's transfers apart: a channel carries a chunk at a
    third of a port's speed, so a connection used again within three slots stalls its sender's slot."""
    left = list(colours)
    out = []
    while left:
        def clash(col: list[Move]) -> int:
            pairs = {(x[1], x[2]) for x in col}
            return sum((SPACING - i) * len(pairs & recent[-1 - i]) for i in range(min(SPACING, len(recent))))
        best = min(range(len(left)), key=lambda i: (clash(left[i]), i))
        col = left.pop(best)
        out.append(col)
        recent.append({(x[1], x[2]) for x in col})
    return out


def _colour(moves: list[Move]) -> list[list[Move]]:
    """A proper edge colouring of the bipartite multigraph (src, dst) with its maximum degree colours:
    padded to a regular multigraph, then one perfect matching per colour (Hall's theorem guarantees it)."""
    if not moves:
        return []
    out_deg: dict[int, int] = {}
    in_deg: dict[int, int] = {}
    for _a, s, d in moves:
        out_deg[s] = out_deg.get(s, 0) + 1
        in_deg[d] = in_deg.get(d, 0) + 1
    ranks = sorted(set(out_deg) | set(in_deg))
    deg = max(max(out_deg.values()), max(in_deg.values()))
    edges: dict[tuple[int, int], list[Move | None]] = {}
    for x in moves:
        edges.setdefault((x[1], x[2]), []).append(x)
    short_out = [r for r in ranks for _ in range(deg - out_deg.get(r, 0))]
    short_in = [r for r in ranks for _ in range(deg - in_deg.get(r, 0))]
    for s, d in zip(short_out, short_in, strict=True):
        edges.setdefault((s, d), []).append(None)
    colours: list[list[Move]] = []
    for _ in range(deg):
        g: nx.Graph = nx.Graph()
        left = [("s", r) for r in ranks]
        g.add_nodes_from(left)
        g.add_nodes_from(("d", r) for r in ranks)
        g.add_edges_from((("s", s), ("d", d)) for (s, d), xs in edges.items() if xs)
        match = nx.bipartite.hopcroft_karp_matching(g, top_nodes=left)
        colour = []
        for r in ranks:
            d = match[("s", r)][1]
            y = edges[(r, d)].pop()
            if y is not None:
                colour.append(y)
        colours.append(colour)
    return colours


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default="dgx2:2")
    ap.add_argument("--order", choices=("pieces", "slots", "lanes"), default="pieces",
                    help="lanes: the shipped construction, the baseline (--trees does not apply)")
    ap.add_argument("--trees", choices=("exact", "split"), default="exact")
    ap.add_argument("--sizes", default="268435456,1073741824")
    ap.add_argument("--instances", default="1,2")
    ap.add_argument("--profile", type=int, default=0, metavar="WINDOWS",
                    help="also print each port's and NIC's busy share in WINDOWS windows of the first size's run")
    ap.add_argument("--graded", type=int, default=0, metavar="K",
                    help="pieces of 2 chunks, the last K of 1 (a shorter last piece)")
    ap.add_argument("--shifted", action="store_true", help="pieces order: shares in shifted steps")
    ap.add_argument("--lag", type=int, default=None, help="pieces order: broadcasts 2 LAG pieces behind")
    ap.add_argument("--tail", type=int, default=0, help="the last pieces cross the NIC as partials both ways")
    ap.add_argument("--pieces", type=int, default=None, help="pieces per block (default: as lanes, 32 on dgx2 x2)")
    args = ap.parse_args()
    model = Model.load()
    print("| machine | order | trees | C | steps | size | instances | bus GB/s | / bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.machines.split(","):
        name, _, count = spec.partition(":")
        nodes = int(count or 1)
        topo = specs.resolve_topology(name, nodes)
        coll = library.collective("allreduce", topo.ranks)
        start = time.process_time()
        if args.order == "lanes":
            sched = checked(lanes(topo, coll), "lanes")
        else:
            sched = checked(periodic(topo, coll, args.order, args.trees, args.pieces, args.tail, args.lag,
                                      args.shifted, args.graded), "lanes_periodic")
        for size in map(int, args.sizes.split(",")):
            bound = bus_bandwidth("allreduce", topo.ranks, size, model_bound(topo, coll, nodes, model)(size))
            for inst in map(int, args.instances.split(",")):
                t = schedule_time(sched, "Simple", inst, size, model, nodes)
                bw = bus_bandwidth("allreduce", topo.ranks, size, t) if t is not None else None
                share = f"{bw / float(bound or 1):.3f}" if bw is not None else "-"
                trees = "-" if args.order == "lanes" else args.trees
                print(f"| {name} x{nodes} | {args.order} | {trees} | {sched.collective.chunk_factor} | "
                      f"{len(sched.steps)} | {size >> 20} MiB | {inst} | {'-' if bw is None else f'{bw:.1f}'} | "
                      f"{share} |", flush=True)
        print(f"<!-- {name} x{nodes}: {time.process_time() - start:.1f} CPU s -->", flush=True)
        if args.profile:
            _print_profile(sched, int(args.sizes.split(",")[0]), int(args.instances.split(",")[0]), nodes,
                           model, args.profile)


def _print_profile(sched: Schedule, size: int, inst: int, nodes: int, model: Model, windows: int) -> None:
    """Each switch group's busy share per window (port_profile.py), the mean first; a group is named by
    its one sender (a rank's egress port), its one receiver (an ingress port) or its ranks (a NIC)."""
    from port_profile import profile

    end, busy = profile(sched, size, inst, nodes, model, windows)
    print(f"\nprofile: {size >> 20} MiB x{inst}, {end:.1f} µs (float run), {windows} windows")
    for key in sorted(busy):
        g = sched.topology.switches[key]
        label = (f"out {g.srcs[0]}" if len(g.srcs) == 1 and len(g.dsts) > 1 else
                 f"in {g.dsts[0]}" if len(g.dsts) == 1 and len(g.srcs) > 1 else
                 f"{g.name or 'group'} {g.srcs}->{g.dsts}")
        row = busy[key]
        print(f"{label:>24} {sum(row) / len(row):.3f} | " + " ".join(f"{x:.2f}" for x in row))


if __name__ == "__main__":
    main()
