"""Allgather on a machine of identical nodes joined by NICs: a small exact search, invariant under the
translation of the nodes and the free automorphisms of a node, with a fixed pattern of NIC partners.

Where the holdings bound (bounds.holdings) is tight, every in-link must bring a chunk its destination
lacks in almost every round (mi250 x 4: 63 chunks through 8 in-slots a round in 9 rounds, 5 to spare);
the matching engine (synth/scale/matching.py) fills them greedily and ends one round above. This asks z3
for a schedule of S steps, one round each, that is
- invariant under the shift of the nodes (node m's GCD g does what node 0's does, its chunks relabelled
  by m) and under a group H of automorphisms of a node acting freely (networkx, as symmetry.py): only
  node 0 is encoded, one variable per H-orbit, 4n times fewer than the machine (mi250 x 4: 12,672
  variables);
- with the NIC partners fixed per round: in round r every GCD g of node m sends over its NIC to GCD pi_r(g)
  of node m + d_r, where d_r cycles through 1..n-1 and pi_r through the permutations of a node that commute
  with H (h(o_i) -> h(k(o_{i^a})) for the orbit representatives o, or i+a mod their number when it is no
  power of two, in lexicographic order): every NIC
  sends and receives in every round, and z3 only chooses what.
The implied constraints that make it answer in a second (mi250 x 4 at S = 9: 0.9 s, 50 s without): no
chunk is sent to a GCD that holds it or twice to one GCD in a round, and after round r a GCD holds at
least all but (its in-slots per round) x (S - r) chunks, else it cannot finish.

A shape, like symmetry.py: a schedule found is valid (checked like every other), "unsat" proves nothing
about other schedules, so it is only used to find one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.exact.symmetry import _shape, free_group

Key = tuple[Any, ...]
# the largest encoding `auto` builds (variables, one per orbit): building is not counted by z3's budget
# (mi250 x 4 at 9 steps: 12,672, 1.5 s with the search; x 5 at 11: 19,360, no answer within 10^7 units
# nor 6 x 10^7 (23 s CPU); x 8 at 17: 47,872, 15 s CPU and 700 MB in vain within the default budget)
MAX_VARIABLES = 15_000


class NodeLayout:
    """The machine seen as n copies of one node of G ranks (rank m*G + g) joined by single-rank NICs of
    one rail: None from `of` when it is not one."""

    def __init__(self, g: int, n: int, links: list[tuple[int, int, int]], nic: int,
                 group: list[list[int]]) -> None:
        self.g, self.n, self.links, self.nic, self.group = g, n, links, nic, group
        self.in_slots = [nic + sum(b for _, v, b in links if v == x) for x in range(g)]
        reps = sorted({min(h[x] for h in group) for x in range(g)})
        where = {h[o]: (hi, i) for hi, h in enumerate(group) for i, o in enumerate(reps)}
        t = len(reps)
        # the representatives permuted by a group acting regularly on them: XOR when t is a power of two
        # (mi250 x 4 at 9 steps: 0.9 s CPU; with the cyclic shifts 15 s), else the cyclic shifts
        shift = (lambda i, a: i ^ a) if t & (t - 1) == 0 else (lambda i, a: (i + a) % t)
        perms = set()
        for k in group:
            for a in range(t):
                perms.add(tuple(group[where[x][0]][k[reps[shift(where[x][1], a)]]] for x in range(g)))
        self.patterns = sorted(perms)

    def variables(self, steps: int) -> int:
        """About how many variables the encoding of `steps` steps has (one per orbit)."""
        return steps * self.n * self.g * (2 * self.g + len(self.links)) // len(self.group)

    @staticmethod
    def of(topo: Topology, coll: Collective) -> NodeLayout | None:
        from smtcoll.bounds.entry import node_of

        own = _shape(coll)
        nodes = node_of(topo)
        if own is None or nodes is None or any(len(o) != 1 for o in own):
            return None
        n = max(nodes) + 1
        g = topo.ranks // n
        if g * n != topo.ranks or nodes != [r // g for r in range(topo.ranks)]:
            return None
        inside = {(l.src, l.dst): l.bandwidth for l in topo.links if nodes[l.src] == nodes[l.dst]}
        links = sorted((u, v, b) for (u, v), b in inside.items() if v < g)
        if any(inside.get((m * g + u, m * g + v)) != b for m in range(n) for u, v, b in links) \
                or len(inside) != n * len(links):
            return None
        # one out-group and one in-group per rank, all of one bandwidth, every pair of nodes fully joined
        bws = {s.bandwidth for s in topo.switches}
        outs = {s.srcs[0] for s in topo.switches if len(s.srcs) == 1}
        ins = {s.dsts[0] for s in topo.switches if len(s.dsts) == 1}
        between = [l for l in topo.links if nodes[l.src] != nodes[l.dst]]
        if len(bws) != 1 or len(topo.switches) != 2 * topo.ranks or len(outs) != topo.ranks \
                or len(ins) != topo.ranks or len(between) != n * (n - 1) * g * g:
            return None
        nic = bws.pop()
        if any(l.bandwidth < nic for l in between):
            return None
        node = Topology("node", g, [l for l in topo.links if l.src < g and l.dst < g])
        group = free_group(node) or [list(range(g))]
        return NodeLayout(g, n, links, nic, group)


def _chunk(n: int, g: int, m: int, j: int) -> int:
    return (m % n) * g + j


class NodeEncoding:
    """The encoding of the module docstring for S steps, node 0's frame: h[c, x, r] GCD x of node 0 holds
    chunk c (= rank c's) after round r; x[u, v, c, r] sent over a link of node 0; z[x, c, r] received
    over x's NIC. A variable stands for its H-orbit."""

    def __init__(self, topo: Topology, coll: Collective, lay: NodeLayout, steps: int) -> None:
        import z3

        self.topo, self.coll, self.lay, self.steps = topo, coll, lay, steps
        self.ctx = z3.Context()
        ctx, n, g = self.ctx, lay.n, lay.g
        chunks = n * g
        self.vars: dict[Key, Any] = {}
        self.canon: dict[Key, Key] = {}
        solver = z3.SolverFor("QF_FD", ctx=ctx)
        done: set[Key] = set()

        def image(h: list[int], key: Key) -> Key:
            kind, xs, cs, r = key
            return kind, tuple(h[x] for x in xs), tuple((c // g) * g + h[c % g] for c in cs), r

        def canon(key: Key) -> Key:
            k = self.canon.get(key)
            if k is None:
                k = self.canon[key] = min(image(h, key) for h in lay.group)
            return k

        def var(kind: str, xs: tuple[int, ...], c: int, r: int) -> Any:
            if kind == "h" and r == 0:
                return z3.BoolVal(c == xs[0], ctx)
            k = canon((kind, xs, (c,), r))
            if k not in self.vars:
                self.vars[k] = z3.Bool("_".join(map(str, [k[0], *k[1], *k[2], k[3]])), ctx)
            return self.vars[k]

        def first(key: Key) -> bool:
            k = canon(key)
            if k in done:
                return False
            done.add(k)
            return True

        for r in range(1, steps + 1):
            arrivals: dict[tuple[int, int], list[Any]] = {}
            for u, v, b in lay.links:
                xs = [var("x", (u, v), c, r) for c in range(chunks)]
                for c in range(chunks):
                    arrivals.setdefault((c, v), []).append(xs[c])
                if first(("L", (u, v), (), r)):
                    for c in range(chunks):
                        solver.add(z3.Implies(xs[c], var("h", (u,), c, r - 1)))
                        solver.add(z3.Implies(xs[c], z3.Not(var("h", (v,), c, r - 1))))
                    solver.add(z3.AtMost(*xs, b))
            d, back = self.partners(r)
            for x in range(g):
                zs = [var("z", (x,), c, r) for c in range(chunks)]
                for c in range(chunks):
                    arrivals.setdefault((c, x), []).append(zs[c])
                if first(("N", (x,), (), r)):
                    for c in range(chunks):
                        m, j = divmod(c, g)
                        # node -d's GCD back[x] holds (m, j) iff node 0's holds (m + d, j)
                        solver.add(z3.Implies(zs[c], var("h", (back[x],), _chunk(n, g, m + d, j), r - 1)))
                        solver.add(z3.Implies(zs[c], z3.Not(var("h", (x,), c, r - 1))))
                    solver.add(z3.AtMost(*zs, lay.nic))
            for c in range(chunks):
                for x in range(g):
                    if first(("H", (x,), (c,), r)):
                        into = arrivals[(c, x)]
                        solver.add(var("h", (x,), c, r) == z3.Or(var("h", (x,), c, r - 1), *into))
                        solver.add(z3.AtMost(*into, 1))
            for x in range(g):
                if first(("S", (x,), (), r)):
                    need = chunks - lay.in_slots[x] * (steps - r)
                    if need > 1:
                        solver.add(z3.AtLeast(*[var("h", (x,), c, r) for c in range(chunks)], need))
        for c in range(chunks):
            for x in range(g):
                if first(("F", (x,), (c,), steps)):
                    solver.add(var("h", (x,), c, steps))
        self.solver = solver

    def partners(self, r: int) -> tuple[int, list[int]]:
        """Round r's NIC pattern: the node offset d and, per receiving GCD x, its sender's GCD."""
        q = r - 1
        d = 1 + q % (self.lay.n - 1)
        pi = self.lay.patterns[q % len(self.lay.patterns)]
        back = [0] * self.lay.g
        for x, y in enumerate(pi):
            back[y] = x
        return d, back

    def solve(self, work: int | None, deadline: float | None) -> tuple[Schedule | None, int]:
        """The schedule when z3 finds one within `work` resource units (and before `deadline`), and the
        units spent."""
        import z3

        res, spent = check_within(self.solver, work, deadline)
        if res != z3.sat:
            return None, spent
        model = self.solver.model()
        true = {k for k, v in self.vars.items() if z3.is_true(model.eval(v, model_completion=True))}
        return self._decode(true), spent

    def _decode(self, true: set[Key]) -> Schedule:
        lay, n, g = self.lay, self.lay.n, self.lay.g
        own = _shape(self.coll)
        assert own is not None
        chunk_of = [o[0] for o in own]

        def on(kind: str, xs: tuple[int, ...], c: int, r: int) -> bool:
            return self.canon.get((kind, xs, (c,), r)) in true

        steps = []
        for r in range(1, self.steps + 1):
            sends: set[Send] = set()
            d, back = self.partners(r)
            for c in range(n * g):
                m, j = divmod(c, g)
                for u, v, _ in lay.links:
                    if on("x", (u, v), c, r):
                        sends.update(Send(chunk_of[_chunk(n, g, m + t, j)], t * g + u, t * g + v) for t in range(n))
                for x in range(g):
                    if on("z", (x,), c, r):
                        sends.update(Send(chunk_of[_chunk(n, g, m + t, j)], ((t - d) % n) * g + back[x], t * g + x)
                                     for t in range(n))
            steps.append(Step(1, sorted(sends)))
        return Schedule(self.topo, self.coll, steps)


def node_schedule(topo: Topology, coll: Collective, step_counts: Iterable[int], work: int | None,
                  deadline: float | None) -> tuple[Schedule | None, int, list[tuple[int, str, float, int]]]:
    """The first schedule of this shape over `step_counts` (fewest first), within `work` z3 units in all;
    with the units spent and per count tried (steps, verdict, CPU s, units). None when the machine is not
    of this form or no count gives one within the budget."""
    lay = NodeLayout.of(topo, coll)
    tried: list[tuple[int, str, float, int]] = []
    spent = 0
    if lay is None:
        return None, 0, tried
    for s in step_counts:
        if work is not None and spent >= work:
            break
        t0 = time.process_time()
        enc = NodeEncoding(topo, coll, lay, s)
        found, units = enc.solve(None if work is None else work - spent, deadline)
        spent += units
        tried.append((s, "sat" if found else "no-shape", time.process_time() - t0, units))
        if found is not None:
            return found, spent, tried
    return None, spent, tried


def check_within(solver: Any, work: int | None, deadline: float | None) -> tuple[Any, int]:
    """z3's answer within `work` resource units (deterministic) and before `deadline` (a safety stop), and
    the units it spent: the one budgeted check of the symmetric searches (this one and `sums`)."""
    import z3

    left = 10**6 if deadline is None else max(0.001, deadline - time.monotonic())
    solver.set("timeout", max(1, int(left * 1000)))
    solver.set("rlimit", 0 if work is None else work)
    res = solver.check()
    try:
        spent = int(solver.statistics().get_key_value("rlimit count"))
    except z3.Z3Exception:  # no work counted yet
        spent = 0
    return res, spent
