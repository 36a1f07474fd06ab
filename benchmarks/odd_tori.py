"""One-chunk Allreduce on tori with a side of 4k + 3 and another odd side (issue 24, session 8): the
evidence behind docs/benchmarks.md "Odd tori (session 8)".

1. `--search`: the overlapping torus construction (synth/scale/allreduce.py) runs one cycle plan per line,
   dimension after dimension. A local search (fixed seed, so the same output every run) changes one line
   at a time: its cycle plan (every shape `_shapes` offers), its rotation and its reflection, in both
   orders of the dimensions, and keeps a change that does not add steps. It prints the construction's
   steps, the fewest the search reached, the distance bound and 1.5x of it.
2. `--exact`: the exact search (`smtcoll synth --method exact --strategy instance --steps D`) at the
   distance bound D on small odd tori, with its verdict, CPU s and peak MB: a schedule of D steps exists
   on 3x3 and none on 3x5 and 5x5. Evidence for "D + 1 steps when a side is 5 or more", not a
   certificate (no bound is claimed from it).

    python benchmarks/odd_tori.py --search [--iterations N]
    python benchmarks/odd_tori.py --exact
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from synth_scale import child  # noqa: E402

from smtcoll import library  # noqa: E402
from smtcoll.synth.scale import allreduce as ar  # noqa: E402
from smtcoll.synth.scale import translate  # noqa: E402

TORI = ["5x7", "7x7", "5x11", "7x9", "7x11", "9x11", "11x11"]
EXACT = [("3x3", 2), ("3x5", 3), ("5x5", 4)]

Choice = tuple[int, bool, int]  # rotation, reflection, index into the shapes of the line's cycle


def _steps(topo: object, g: translate.Group, order: list[int], choice: dict[int, list[Choice]],
           shapes: dict[int, list[ar.Shape]]) -> int | None:
    plan = ar._Plan(g.ranks)
    for k in order:
        for i, line in enumerate(ar._lines(g, k)):
            rot, flip, s = choice[k][i]
            cyc = line[rot:] + line[:rot]
            ar._cycle(plan, cyc[::-1] if flip else cyc, shapes[k][s])
    steps = ar._asap(topo, plan)  # type: ignore[arg-type]
    return None if steps is None else len(steps)


def search(iterations: int) -> None:
    print("| torus | construction | local search (both orders) | distance D | 1.5 D | CPU s |")
    print("|---|---|---|---|---|---|")
    for name in TORI:
        c0 = time.process_time()
        topo = library.topology(f"torus2d:{name}", 1)
        g = translate.group_of(topo)
        assert g is not None
        shapes = {k: ar._shapes(n) for k, n in enumerate(g.dims)}
        built = ar.torus_allreduce(topo, library.collective("allreduce", topo.ranks))
        assert built is not None
        rng = random.Random(24)
        best: int | None = None
        for order in ([0, 1], [1, 0]):
            lines = {k: len(ar._lines(g, k)) for k in order}
            # start from each dimension's best shape on every line (what the construction runs)
            start = {}
            for k in order:
                counts = [_steps(topo, g, [k], {k: [(0, False, s)] * lines[k]}, shapes) or 10**9
                          for s in range(len(shapes[k]))]
                start[k] = [(0, False, counts.index(min(counts)))] * lines[k]
            cur = _steps(topo, g, order, start, shapes) or 10**9
            choice = start
            for _ in range(iterations):
                k = rng.choice(order)
                i = rng.randrange(lines[k])
                new = {kk: list(v) for kk, v in choice.items()}
                new[k][i] = (rng.randrange(g.dims[k]), rng.random() < 0.5, rng.randrange(len(shapes[k])))
                s = _steps(topo, g, order, new, shapes)
                if s is not None and s <= cur:
                    cur, choice = s, new
            best = cur if best is None else min(best, cur)
        d = sum(n // 2 for n in g.dims)
        print(f"| torus2d:{name} | {len(built.steps)} | {best} | {d} | {1.5 * d:g} | "
              f"{time.process_time() - c0:.1f} |")


def exact() -> None:
    print("| torus | steps D | verdict | CPU s | peak MB |")
    print("|---|---|---|---|---|")
    for name, d in EXACT:
        cmd = [sys.executable, "-m", "smtcoll", "synth", "-t", f"torus2d:{name}", "-c", "allreduce", "--method",
               "exact", "--strategy", "instance", "--steps", str(d), "--budget", "0"]
        out, code, cpu, mb = child(cmd)
        verdict = ("found" if code == 0 and out.startswith("found") else
                   "none (unsat)" if "(unsat)" in out else f"exit {code}")
        print(f"| torus2d:{name} | {d} | {verdict} | {cpu:.1f} | {mb:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--search", action="store_true", help="the local search over the lines' cycle plans")
    ap.add_argument("--iterations", type=int, default=300, help="changes tried per torus and order")
    ap.add_argument("--exact", action="store_true", help="the exact search at the distance bound")
    args = ap.parse_args()
    if args.search:
        search(args.iterations)
    if args.exact:
        exact()


if __name__ == "__main__":
    main()
