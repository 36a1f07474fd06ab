"""One-address Allreduce on nodes of 2^D GPUs, each with a NIC of its own to every GPU of the other nodes: two
rounds that spread every contribution to n GPUs, one in each of n groups, then recursive doubling in the groups.

The last D rounds: the machine's n * 2^D GPUs fall into n groups Q_j, the GPU of local index g in node
j + s_g (nodes mod n), one of each local index; in a group the GPUs are the corners of a D-cube (a labelling of
the local indices) and in round i every GPU exchanges its sum with its neighbour across dimension i through the
NICs, as in recursive doubling, so two neighbours must sit on different nodes (s differs). That ends with every
GPU holding everything exactly when the sets the GPUs of one group hold at its start are disjoint and cover all
contributions: each contribution must be held by exactly one GPU of each group after the first two rounds.

The first two rounds (the spread): round 1 only the NICs, GPU (a, g) taking the contribution of (a + d1_g,
p1_g) (p1 a permutation, so a NIC sends once); round 2 every link of a subgraph S of the node's links in both
directions and the NICs again, (a, g) taking what (a + d2_g, p2_g) holds. Contribution (0, h) is then at h, at
its round-1 receiver x = p1^-1(h) in node -d1_x, at their S-neighbours and at their round-2 NIC receivers:
4 + deg_S(h) + deg_S(x) GPUs, which must be n, and their groups (the colour s_g - a of GPU (a, g)) pairwise
distinct. Distinct colours also make every arrival disjoint from what its receiver holds. S is the node's graph
less a matching: none (mi250 x 11: degrees 3 and 4, p1 pairs them), a perfect matching of the vertices of most
degree (x 10: 3-regular) or of all vertices (x 9). z3 chooses p1, p2, d1, d2 and s (bit-vectors of a few
bits), first invariant under a xor of the node that preserves S (`_spread`: mi250 x 9-11 found in 0.5-1 CPU s,
where the general form took 1-20 or spent its budget), then the general form; the D-cube labelling is a small
backtracking search. 2 + D steps: mi250 x 9-11 in 6 (bound 4; the windows 7, x 9's lift 6 in 14 CPU s). The
checker judges the schedule; nothing it refuses is kept.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.exact.rail_groups import one_address_nodes

RLIMIT = 12_000_000  # z3 resource units per attempt of the general form (deterministic): mi250 x 9 11.6 M
SYM_RLIMIT = 4_000_000  # per attempt invariant under a xor: mi250 x 10 (xor 3) 3.6 M, x 11 3.1 M, x 9 2.0 M
WORK = 30_000_000  # and in all
MATCHINGS = 3  # perfect matchings tried per vertex set (the first found, in order)
MOVES = 20_000  # steps of each backtracking search (matchings, the cube's labels): it gives up beyond them
MAX_GPUS = 32  # GPUs per node: the encoding has a term per pair of local indices and per holder (mi250: 16)


def spread_allreduce(topo: Topology, coll: Collective, below: int, deadline: float | None = None,
                     ) -> tuple[Schedule | None, int]:
    """The schedule of the module docstring when it has fewer than `below` steps, checked (None where the
    machine is not of this shape or z3 finds nothing within the budget or before `deadline`, a safety stop),
    and the z3 units spent."""
    shape = _shape(topo, coll)
    if shape is None:
        return None, 0
    n, p, edges = shape
    dims = p.bit_length() - 1
    if 2 + dims >= below:
        return None, 0
    spent = 0
    for local in _subgraphs(p, edges, n):
        for xor in [*_xors(p, local), None]:
            if spent >= WORK or (deadline is not None and time.monotonic() >= deadline):
                return None, spent
            cap = RLIMIT if xor is None else SYM_RLIMIT
            found, units = _spread(n, p, local, xor, min(cap, WORK - spent), deadline)
            spent += units
            if found is None:
                continue
            labels = _labels(p, found[4])
            if labels is None:
                continue
            s = _schedule(topo, coll, n, p, local, found, labels)
            if check_schedule(s).verdict == "ok":
                return s, spent
    return None, spent


def _shape(topo: Topology, coll: Collective) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(nodes n >= 3, GPUs per node p = 2^D, the node's links as local pairs u < v) where the collective is
    one-address Allreduce, the nodes are consecutive ranks linked alike in both directions, and every GPU reaches
    every GPU of the other nodes over a NIC of its own (one send and one receipt a round)."""
    blocks = one_address_nodes(topo, coll)
    if blocks is None:
        return None
    n, p = blocks
    if n < 3 or p < 2 or p > MAX_GPUS or p & (p - 1):
        return None
    links = {(l.src, l.dst) for l in topo.links if l.bandwidth > 0}
    inside = {(u % p, v % p) for u, v in links if u // p == v // p}
    if any((v, u) not in inside or ((a * p + u, a * p + v) not in links) for u, v in inside for a in range(n)):
        return None
    if any((u, v) not in links for u in range(topo.ranks) for v in range(topo.ranks) if u // p != v // p):
        return None
    # every switch group a NIC of one GPU: one sender (ingress: one receiver), all its members in other nodes
    for g in topo.switches:
        if not ((len(g.srcs) == 1 and all(d // p != g.srcs[0] // p for d in g.dsts))
                or (len(g.dsts) == 1 and all(s // p != g.dsts[0] // p for s in g.srcs))):
            return None
    return n, p, sorted((u, v) for u, v in inside if u < v)


def _subgraphs(p: int, edges: list[tuple[int, int]], n: int) -> list[dict[int, list[int]]]:
    """The subgraphs S (neighbour lists) of the module docstring whose degrees can pair to n - 4: the graph
    itself, less perfect matchings of its vertices of most degree, less perfect matchings of all vertices."""
    full = {v: sorted({u for e in edges for u in e if v in e and u != v}) for v in range(p)}
    most = max(len(x) for x in full.values())
    out = [full]
    for verts in ([v for v in range(p) if len(full[v]) == most], list(range(p))):
        out += [{v: [u for u in full[v] if (min(u, v), max(u, v)) not in m] for v in range(p)}
                for m in _matchings(verts, edges)]
    return [s for s in out if _pairs(s, n)]


def _matchings(verts: list[int], edges: list[tuple[int, int]]) -> list[set[tuple[int, int]]]:
    """Up to MATCHINGS perfect matchings of the graph `edges` restricted to `verts`, in lexicographic order.
    By hand: networkx finds one maximum matching, not several perfect ones in a fixed order."""
    inner = [e for e in edges if e[0] in verts and e[1] in verts]
    found: list[set[tuple[int, int]]] = []
    moves = [0]

    def grow(left: list[int], taken: list[tuple[int, int]]) -> None:
        moves[0] += 1
        if len(found) >= MATCHINGS or moves[0] > MOVES:
            return
        if not left:
            found.append(set(taken))
            return
        v = left[0]
        for e in inner:
            if v in e:
                u = e[0] + e[1] - v
                if u in left[1:]:
                    grow([w for w in left if w not in e], [*taken, e])

    if len(verts) % 2 == 0:
        grow(sorted(verts), [])
    return found


def _pairs(local: dict[int, list[int]], n: int) -> bool:
    """Whether a permutation pairs every vertex of degree k with one of degree n - 4 - k."""
    degrees = [len(x) for x in local.values()]
    return all(degrees.count(k) == degrees.count(n - 4 - k) for k in set(degrees))


def _xors(p: int, local: dict[int, list[int]]) -> list[int]:
    """The xors k of the local index that map S onto itself, smallest first."""
    return [k for k in range(1, p) if all(sorted(u ^ k for u in local[v]) == local[v ^ k] for v in local)]


Found = tuple[list[int], list[int], list[int], list[int], list[int]]  # p1, d1, p2, d2, s


def _spread(n: int, p: int, local: dict[int, list[int]], xor: int | None, units: int,
            deadline: float | None = None) -> tuple[Found | None, int]:
    """z3's p1, d1, p2, d2 and colours s (module docstring) within `units`, and the units spent; with `xor`
    k: invariant under the local index's xor k, for even n with the colours moved by n / 2 (unmoved, z3 proves
    none at mi250 x 10 at once), for odd n with the node offsets and colours negated (n / 2 is no offset)."""
    import z3

    from smtcoll.synth.exact.nodes import check_within

    ctx = z3.Context()
    width = max(n, p).bit_length() + 1
    solver = z3.SolverFor("QF_BV", ctx=ctx)

    def bv(name: str) -> z3.BitVecRef:
        return z3.BitVec(name, width, ctx)

    def val(x: int) -> z3.BitVecRef:
        return z3.BitVecVal(x, width, ctx)

    def add(a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:  # mod n, both below n
        t = a + b
        return z3.If(z3.ULT(t, val(n)), t, t - val(n))

    s, d1, d2, p1, p2 = ([bv(f"{k}{g}") for g in range(p)] for k in ("s", "d1_", "d2_", "p1_", "p2_"))
    for g in range(p):
        solver.add(z3.ULT(s[g], val(n)), z3.ULT(val(0), d1[g]), z3.ULT(d1[g], val(n)), z3.ULT(val(0), d2[g]),
                   z3.ULT(d2[g], val(n)), z3.ULT(p1[g], val(p)), z3.ULT(p2[g], val(p)))
    solver.add(z3.Distinct(*p1), z3.Distinct(*p2), s[0] == val(0))
    if xor is not None and n % 2 == 0:
        for g in range(p):
            solver.add(p1[g ^ xor] == p1[g] ^ val(xor), p2[g ^ xor] == p2[g] ^ val(xor), d1[g ^ xor] == d1[g],
                       d2[g ^ xor] == d2[g], s[g ^ xor] == add(s[g], val(n // 2)))
    elif xor is not None:
        def neg(x: z3.BitVecRef) -> z3.BitVecRef:
            return z3.If(x == val(0), x, val(n) - x)

        for g in range(p):
            solver.add(p1[g ^ xor] == p1[g] ^ val(xor), p2[g ^ xor] == p2[g] ^ val(xor), d1[g ^ xor] == neg(d1[g]),
                       d2[g ^ xor] == neg(d2[g]), s[g ^ xor] == neg(s[g]))
    # tau[w]: the colour of w's round-2 NIC receiver, as seen from w's node
    tau = [bv(f"tau{w}") for w in range(p)]
    for w, x in itertools.product(range(p), repeat=2):
        solver.add(z3.Implies(p2[x] == val(w), tau[w] == add(s[x], d2[x])))
    for h in range(p):
        mine = [s[h], *(s[v] for v in local[h]), tau[h]]
        for x in range(p):
            if 4 + len(local[h]) + len(local[x]) != n:
                solver.add(p1[x] != val(h))
                continue
            theirs = [add(s[x], d1[x]), *(add(s[v], d1[x]) for v in local[x]), add(tau[x], d1[x])]
            terms = [*mine, *theirs]
            solver.add(z3.Implies(p1[x] == val(h), z3.Distinct(*terms)))
    res, spent = check_within(solver, units, deadline)
    if res != z3.sat:
        return None, spent
    m = solver.model()

    def ints(xs: Sequence[z3.BitVecRef]) -> list[int]:
        return [m.eval(x, model_completion=True).as_long() for x in xs]

    return (ints(p1), ints(d1), ints(p2), ints(d2), ints(s)), spent


def _labels(p: int, colours: list[int]) -> list[int] | None:
    """Corners of the D-cube for the local indices, neighbours of unlike colour (backtracking, the most common
    colours first); None where there is no such labelling or none is found within MOVES. By hand: a proper
    colouring of the cube with given colour classes is not a library call (networkx's colourings choose theirs)."""
    order = sorted(range(p), key=lambda g: (-colours.count(colours[g]), g))
    label: dict[int, int] = {}
    moves = [0]

    def place(i: int) -> bool:
        moves[0] += 1
        if i == p:
            return True
        if moves[0] > MOVES:
            return False
        g = order[i]
        for k in range(p):
            if k in label.values() or any(bin(label[x] ^ k).count("1") == 1 and colours[x] == colours[g]
                                          for x in label):
                continue
            label[g] = k
            if place(i + 1):
                return True
            del label[g]
        return False

    return [label[g] for g in range(p)] if place(0) else None


def _schedule(topo: Topology, coll: Collective, n: int, p: int, local: dict[int, list[int]], found: Found,
              labels: list[int]) -> Schedule:
    p1, d1, p2, d2, s = found
    a0 = coll.addresses[0]

    def rank(a: int, g: int) -> int:
        return (a % n) * p + g

    first = [Send(a0, rank(a + d1[g], p1[g]), rank(a, g)) for a in range(n) for g in range(p)]
    second = [Send(a0, rank(a, u), rank(a, v)) for a in range(n) for v in range(p) for u in local[v]]
    second += [Send(a0, rank(a + d2[g], p2[g]), rank(a, g)) for a in range(n) for g in range(p)]
    corner = {k: g for g, k in enumerate(labels)}
    steps = [Step(1, sorted(first)), Step(1, sorted(second))]
    for i in range(p.bit_length() - 1):
        steps.append(Step(1, sorted(Send(a0, rank(s[g] + j, g), rank(s[o] + j, o))
                                    for g in range(p) for o in [corner[labels[g] ^ (1 << i)]] for j in range(n))))
    return Schedule(topo, coll, steps)
