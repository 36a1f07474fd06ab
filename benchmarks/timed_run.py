"""The sweep's timed run on one lowered construction: CPU seconds of `cost.predict` over 1 KiB..1 GiB (the
supporting lines of its time), median of several runs (docs/benchmarks.md, "The timed run").

    python benchmarks/timed_run.py [--runs 3] [--model FILE] MACHINE:NODES:COLLECTIVE:METHOD:INSTANCES ...

Prints one line per case: the lines found (start, fixed µs, µs per byte), so that two versions of the code can
be compared for identical output, and the median CPU seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from smtcoll import library
from smtcoll.lower import LowerOptions, lower
from smtcoll.sweep import cost
from smtcoll.synth.constructions import build

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ("dgx2:2:allreduce:rail:8", "a100:1:allgather:pairwise:8", "dgx1:1:allreduce:ring:8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", default=list(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", type=Path, default=REPO / "benchmarks" / "vs_nccl.toml")
    args = ap.parse_args()
    model = cost.Model.load(args.model)
    for case in args.cases:
        name, nodes, kind, method, instances = case.split(":")
        topo = library.topology(name, int(nodes))
        schedule = build(method, topo, library.collective(kind, topo.ranks))
        program = lower(schedule, LowerOptions(int(instances), "Simple", "executor", "outofplace", 1 << 10, 1 << 30,
                                               True)).program
        m = cost.machine(topo, int(nodes), model)
        times, curve = [], None
        for _ in range(args.runs):
            start = time.process_time()
            curve = cost.predict(program, m, model, 1 << 10, 1 << 30)
            times.append(time.process_time() - start)
        lines = [] if curve is None else [(float(s), float(ln.fixed), float(ln.slope))
                                          for s, ln in zip(curve.starts, curve.lines)]
        print(f"{case}: {statistics.median(times):.2f} CPU s (median of {args.runs}); lines {lines}", flush=True)


if __name__ == "__main__":
    main()
