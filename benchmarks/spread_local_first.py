"""A two-round spread whose first round also uses the node's links (issue 24, session 21): one-address Allreduce on n
identical nodes of 16 GPUs with a NIC each (mi250), then 4 rounds of recursive doubling in n groups, as
`smtcoll.synth.exact.spread` does; 6 steps in all. Not in the door: at 13 nodes z3 needs about 200 M units for the
colours (over 30 CPU s), where the door's searches get 30 M.

Why a new round 1: the spread of the door sends only over the NICs in round 1, so a contribution reaches
4 + deg_S(h) + deg_S(x) <= 12 GPUs; 13 needs local sends in round 1. GPU g sends in round 1 over the arcs a(g) and
its NIC (to local index p1_g, d1_g nodes on), in round 2 over the arcs b(g) and its NIC (p2_g, d2_g). Contribution
(0, h) is then at n GPUs exactly when 4 + |b(h)| + sum over y in a(h) of (2 + |b(y)|) + |b(p1_h)| = n, and those
must sit in distinct groups (colour s_g - a of GPU (a, g)), which also keeps every sum free of repeats.

1. The skeleton (a, b and the local indices p1): z3 over Booleans, the count for every h, the GPUs of node 0 that
   hold (0, h) distinct, invariant under the xor `--xor` of the local index (an automorphism of the node).
2. The colours, offsets and round-2 receivers: z3 over bit-vectors (as the door's spread), invariant under the map
   (a, g) -> (-a, g xor k) for odd n.
3. The cube's labels (`spread._labels`), the schedule, the checker (`check_schedule`), and optionally the file.

Counts (docs/benchmarks.md, "... (session 21)"): over all 16 sources the walks sum to
sum_w (2 + in-arcs(w)) (2 + |b(w)|) <= 8 x 12 + 8 x 16 = 224 on mi250's node (degrees 3 and 4), so n = 15 is out of
reach of any two-round spread, and n = 14 needs every GPU at that maximum: z3 proves no skeleton (`--nodes 14`,
`--xor 0 --skeleton-units 2000000000`).

    python benchmarks/spread_local_first.py [--nodes 13] [--xor 11] [--units 250000000] [--skeleton FILE | --search]
        [-o x13.json]

At 13 nodes the skeleton defaults to SKELETON_13 (the one whose colours z3 finds, about 35 CPU s in all); `--search`
searches for one instead (z3 returns another, whose colours it does not find within 250 M units).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import z3

from smtcoll import specs
from smtcoll.check.schedule import check_schedule
from smtcoll.formats.schedules import save_schedule
from smtcoll.model import Schedule, Send, Step
from smtcoll.synth.exact.spread import _labels

P = 16  # GPUs per node
SKELETON_13 = Path(__file__).parent / "results" / "spread-local-first-mi250-x13-skeleton.json"


def node_links(topo) -> dict[int, list[int]]:
    return {v: sorted({l.dst for l in topo.links if l.src == v and l.dst < P}) for v in range(P)}


def _solve(s: z3.Solver, what: str) -> tuple[z3.ModelRef | None, int]:
    res = s.check()
    spent = s.statistics().get_key_value("rlimit count")
    if res != z3.sat:
        print(f"{what}: {res} after {spent} units", flush=True)
        return None, spent
    return s.model(), spent


def skeleton(n: int, nb: dict[int, list[int]], xor: int, units: int) -> tuple[dict | None, int]:
    s = z3.Solver()
    s.set("rlimit", units)
    a = {(u, v): z3.Bool(f"a{u}_{v}") for u in range(P) for v in nb[u]}
    b = {(u, v): z3.Bool(f"b{u}_{v}") for u in range(P) for v in nb[u]}
    p = {(h, x): z3.Bool(f"p{h}_{x}") for h in range(P) for x in range(P)}
    if xor:
        for u, v in a:
            s.add(a[u, v] == a[u ^ xor, v ^ xor], b[u, v] == b[u ^ xor, v ^ xor])
        for h, x in p:
            s.add(p[h, x] == p[h ^ xor, x ^ xor])
    for h in range(P):
        s.add(z3.PbEq([(p[h, x], 1) for x in range(P)], 1))
        s.add(z3.PbEq([(p[x, h], 1) for x in range(P)], 1))
    for h in range(P):
        for z in range(P):  # node 0's holders of (0, h) after round 2: each GPU once
            terms = [z3.BoolVal(True)] if z == h else []
            terms += [t[h, z] for t in (a, b) if (h, z) in t]
            terms += [z3.And(a[h, y], b[y, z]) for y in nb[h] if (y, z) in b]
            if len(terms) > 1:
                s.add(z3.PbLe([(t, 1) for t in terms], 1))
        count = [(b[h, u], 1) for u in nb[h]]
        for y in nb[h]:
            count += [(a[h, y], 2), *((z3.And(a[h, y], b[y, u]), 1) for u in nb[y])]
        count += [(z3.And(p[h, x], b[x, u]), 1) for x in range(P) for u in nb[x]]
        s.add(z3.PbEq(count, n - 4))
    m, spent = _solve(s, "skeleton")
    if m is None:
        return None, spent
    on = lambda t: sorted(k for k, v in t.items() if z3.is_true(m.eval(v, model_completion=True)))  # noqa: E731
    return {"a": on(a), "b": on(b)}, spent


def colours(n: int, sk: dict, xor: int, units: int) -> tuple[dict | None, int]:
    aa = {g: [v for u, v in sk["a"] if u == g] for g in range(P)}
    bb = {g: [v for u, v in sk["b"] if u == g] for g in range(P)}
    base = {h: 2 + len(bb[h]) + sum(2 + len(bb[y]) for y in aa[h]) for h in range(P)}
    allowed = {h: [x for x in range(P) if base[h] + 2 + len(bb[x]) == n] for h in range(P)}
    s = z3.SolverFor("QF_BV")
    s.set("rlimit", units)
    w = max(6, (2 * n).bit_length())
    val = lambda x: z3.BitVecVal(x, w)  # noqa: E731

    def sub(x: z3.BitVecRef, y: z3.BitVecRef) -> z3.BitVecRef:
        return z3.If(z3.UGE(x, y), x - y, x + val(n) - y)

    def neg(x: z3.BitVecRef) -> z3.BitVecRef:
        return z3.If(x == val(0), x, val(n) - x)

    sig, d1, d2, p1, p2 = ([z3.BitVec(f"{k}{g}", w) for g in range(P)] for k in ("s", "d1_", "d2_", "p1_", "p2_"))
    for g in range(P):
        s.add(z3.ULT(sig[g], val(n)), z3.ULT(val(0), d1[g]), z3.ULT(d1[g], val(n)), z3.ULT(val(0), d2[g]),
              z3.ULT(d2[g], val(n)), z3.ULT(p1[g], val(P)), z3.ULT(p2[g], val(P)))
        s.add(z3.Or([p1[g] == val(x) for x in allowed[g]]))
    s.add(z3.Distinct(*p1), z3.Distinct(*p2), sig[0] == val(0))
    if xor:
        for g in range(P):
            s.add(p1[g ^ xor] == p1[g] ^ val(xor), p2[g ^ xor] == p2[g] ^ val(xor), d1[g ^ xor] == neg(d1[g]),
                  d2[g ^ xor] == neg(d2[g]), sig[g ^ xor] == neg(sig[g]))
    far = [z3.BitVec(f"tk{g}", w) for g in range(P)]  # the colour of g's round-2 NIC receiver, from g's node
    for g, x in itertools.product(range(P), repeat=2):
        s.add(z3.Implies(p2[g] == val(x), far[g] == sub(sig[x], d2[g])))
    for h in range(P):
        mine = [sig[z] for z in [h, *aa[h], *bb[h], *(z for y in aa[h] for z in bb[y])]] + [far[g] for g in [h, *aa[h]]]
        for x in allowed[h]:
            theirs = [sub(k, d1[h]) for k in [sig[x], *(sig[z] for z in bb[x]), far[x]]]
            s.add(z3.Implies(p1[h] == val(x), z3.Distinct(*mine, *theirs)))
    m, spent = _solve(s, "colours")
    if m is None:
        return None, spent
    v = lambda e: m.eval(e, model_completion=True).as_long()  # noqa: E731
    return {"p1": [v(x) for x in p1], "d1": [v(x) for x in d1], "p2": [v(x) for x in p2],
            "d2": [v(x) for x in d2], "s": [v(x) for x in sig]}, spent


def schedule(topo, coll, n: int, sk: dict, c: dict, labels: list[int]) -> Schedule:
    a0 = coll.addresses[0]

    def rank(a: int, g: int) -> int:
        return (a % n) * P + g

    first = [Send(a0, rank(a, u), rank(a, v)) for a in range(n) for u, v in sk["a"]]
    first += [Send(a0, rank(a, g), rank(a + c["d1"][g], c["p1"][g])) for a in range(n) for g in range(P)]
    second = [Send(a0, rank(a, u), rank(a, v)) for a in range(n) for u, v in sk["b"]]
    second += [Send(a0, rank(a, g), rank(a + c["d2"][g], c["p2"][g])) for a in range(n) for g in range(P)]
    corner = {k: g for g, k in enumerate(labels)}
    s = c["s"]
    steps = [Step(1, sorted(first)), Step(1, sorted(second))]
    for i in range(4):
        steps.append(Step(1, sorted(Send(a0, rank(s[g] + j, g), rank(s[o] + j, o))
                                    for g in range(P) for o in [corner[labels[g] ^ (1 << i)]] for j in range(n))))
    return Schedule(topo, coll, steps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=13)
    ap.add_argument("--xor", type=int, default=11, help="the node automorphism g -> g xor k both searches keep")
    ap.add_argument("--units", type=int, default=250_000_000, help="z3 units for the colours")
    ap.add_argument("--skeleton-units", type=int, default=200_000_000, help="z3 units for the skeleton")
    ap.add_argument("--skeleton", type=Path, help="a skeleton this script printed (JSON: a, b), instead of searching")
    ap.add_argument("--search", action="store_true", help="search for the skeleton even at 13 nodes")
    ap.add_argument("-o", "--out", type=Path)
    args = ap.parse_args()
    n = args.nodes
    topo = specs.resolve_topology("mi250", n)
    coll = specs.resolve_collective("allreduce", topo.ranks)
    t0 = time.process_time()
    if args.skeleton is None and n == 13 and not args.search:
        args.skeleton = SKELETON_13
    if args.skeleton:
        sk = {k: [tuple(e) for e in v] for k, v in json.loads(args.skeleton.read_text()).items() if k in ("a", "b")}
    else:
        sk, spent = skeleton(n, node_links(topo), args.xor, args.skeleton_units)
        print(f"skeleton: {spent} units, {time.process_time() - t0:.1f} CPU s", flush=True)
    if sk is None:
        return 1
    c, units = colours(n, sk, args.xor, args.units)
    print(f"colours: {units} units, {time.process_time() - t0:.1f} CPU s", flush=True)
    if c is None:
        return 1
    labels = _labels(P, c["s"])
    if labels is None:
        print("no cube labelling with unlike neighbours")
        return 1
    s = schedule(topo, coll, n, sk, c, labels)
    verdict = check_schedule(s).verdict
    print(json.dumps({"nodes": n, "steps": len(s.steps), "checker": verdict, "skeleton": sk, **c}))
    if verdict == "ok" and args.out:
        save_schedule(s, args.out)
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
