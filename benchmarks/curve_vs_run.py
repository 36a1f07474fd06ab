"""Does the sweep's predicted curve (`smtcoll.sweep.cost.predict` over a range) equal the timed run of the
same lowered program at each size (`predict` over the one size)? For each construction of a machine (NCCL's
baselines and the throughput constructions, `smtcoll.synth.constructions`), lowered as the sweep lowers them
(executor, out-of-place, each protocol and instance count given), the curve over LOW..HIGH is compared with
direct runs at geometric and random sizes in between.

    python benchmarks/curve_vs_run.py --machines ndv2,a100:2 --collectives allgather,allreduce
        [--sizes 1KiB:1GiB] [--points 200] [--instances 1,8] [--protocols Simple] [--only forest,...]

Prints, per program: the pieces of the curve, the runs the curve took, the sizes where curve != run, and the
largest under- and over-estimate (curve below / above the run, in % of the run).
"""

from __future__ import annotations

import argparse
import random
import time
from fractions import Fraction

from smtcoll import library, specs
from smtcoll.errors import SmtcollError
from smtcoll.lower import LowerOptions, lower
from smtcoll.sweep import cost
from smtcoll.sweep.sizes import parse_range
from smtcoll.synth.constructions import constructions


def sizes_between(low: int, high: int, points: int, seed: int = 1) -> list[int]:
    """Half geometric (every ratio the same), half uniform at random on a log scale: whole bytes."""
    rng = random.Random(seed)
    half = points // 2
    geo = {round(low * (high / low) ** (i / max(1, half - 1))) for i in range(half)}
    rnd = {round(low * (high / low) ** rng.random()) for _ in range(points - half)}
    return sorted({min(high, max(low, s)) for s in geo | rnd})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--machines", default="ndv2")
    ap.add_argument("--collectives", default="allgather")
    ap.add_argument("--sizes", default="1KiB:1GiB")
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--instances", default="1,8")
    ap.add_argument("--protocols", default="Simple")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    model = cost.Model.load()
    rng = parse_range(args.sizes)
    sizes = sizes_between(rng.low, rng.high, args.points)
    print("| machine | collective | program | pieces | runs | sizes off | max under % | max over % | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.machines.split(","):
        name, _, count = spec.partition(":")
        nodes = int(count or 1)
        topo = specs.resolve_topology(name, nodes)
        m = cost.machine(topo, nodes, model)
        for kind in args.collectives.split(","):
            coll = library.collective(kind, topo.ranks)
            for c in constructions(topo, coll):
                if args.only and c.name not in args.only.split(","):
                    continue
                for inst in map(int, args.instances.split(",")):
                    for proto in args.protocols.split(","):
                        label = f"{c.name} {proto} x{inst}"
                        try:
                            program = lower(c.schedule, LowerOptions(inst, proto, "executor", "outofplace",
                                                                      rng.low, rng.high, True)).program
                        except SmtcollError as e:
                            print(f"<!-- {name} x{nodes} {kind} {label}: not lowerable: {str(e)[:60]} -->")
                            continue
                        start = time.process_time()
                        memo: dict = {}
                        curve = cost.predict(program, m, model, rng.low, rng.high, memo=memo)
                        runs = sum(len(v) for v in memo.values())
                        spent = time.process_time() - start
                        if curve is None:
                            print(f"<!-- {name} x{nodes} {kind} {label}: does not run -->")
                            continue
                        off = 0
                        under = over = Fraction(0)
                        for s in sizes:
                            direct = cost.predict(program, m, model, s, s)
                            assert direct is not None
                            run, est = direct.at(s), curve.at(s)
                            if run != est:
                                off += 1
                                under = max(under, (run - est) / run)
                                over = max(over, (est - run) / run)
                        print(f"| {name} x{nodes} | {kind} | {label} | {len(curve.lines)} | "
                              f"{runs} | {off}/{len(sizes)} | {float(under) * 100:.3f} | "
                              f"{float(over) * 100:.3f} | {spent:.2f} |", flush=True)


if __name__ == "__main__":
    main()
