"""Which throughput constructions lower only through the lowering's depid tries (fitted spreading, scratch
without reuse: docs/lower.md "Dependencies"), and how they time: docs/benchmarks.md "Lowering that fits
(session 11)". Each construction is lowered at --instances (Simple, executor, out of place); a line is
printed for each one that used the tries: refused all the same, or its XML nodes a rank and, within the
readers' 4096, its share of the sweep's bound at 256 MiB and 1 GiB in the vs_nccl model.

    python benchmarks/fitted_lowering.py [--machines dgx2,amd8,...] [--collectives allgather,...] [--instances 8]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from smtcoll import library, specs
from smtcoll.check.parse_rules import rank_nodes
from smtcoll.errors import SmtcollError
from smtcoll.lower import LowerOptions, pipeline
from smtcoll.msccl.runtime import MAX_NODES
from smtcoll.sweep.cost import Model, bus_bandwidth, machine, predict
from smtcoll.sweep.tasks import model_bound
from smtcoll.synth.constructions import constructions

SIZES = (1 << 28, 1 << 30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default="dgx2,amd8,a100,mi250,ndv2,dgx1")
    ap.add_argument("--collectives", default="allgather,reducescatter,allreduce")
    ap.add_argument("--instances", type=int, default=8)
    args = ap.parse_args()
    model = Model.load(Path(__file__).with_name("vs_nccl.toml"))
    tried: list[bool] = []
    plain = pipeline._spread_fit

    def spy(*a: Any, **k: Any) -> Any:  # records a fitted try (the 8th argument)
        tried.append(bool(k.get("fitted", a[7] if len(a) > 7 else False)))
        return plain(*a, **k)

    pipeline._spread_fit = spy
    start = time.process_time()
    for spec in args.machines.split(","):
        name, _, count = spec.partition(":")
        nodes = int(count or 1)
        topo = specs.resolve_topology(name, nodes)
        for kind in args.collectives.split(","):
            coll = library.collective(kind, topo.ranks)
            try:
                cons = constructions(topo, coll)
            except SmtcollError as e:
                print(f"{spec} {kind}: no constructions: {e}", flush=True)
                continue
            for c in cons:
                tried.clear()
                options = LowerOptions(args.instances, "Simple", "executor", "outofplace", SIZES[0], SIZES[-1], True)
                try:
                    low = pipeline.lower(c.schedule, options)
                except SmtcollError as e:
                    if any(tried):
                        print(f"{spec} {kind} {c.name}: refused after the tries: {str(e)[:90]}", flush=True)
                    continue
                if not any(tried):
                    continue
                p = low.program
                most = max(rank_nodes(p, g) for g in p.gpus)
                line = f"{spec} {kind} {c.name} (C {c.chunks}) x{args.instances}: {most} XML nodes a rank"
                curve = None
                if most <= MAX_NODES:
                    curve = predict(p, machine(topo, nodes, model), model, SIZES[0], SIZES[-1])
                for size in SIZES:
                    if curve is None:
                        break
                    bw = bus_bandwidth(kind, topo.ranks, size, curve.at(size))
                    bound = bus_bandwidth(kind, topo.ranks, size, model_bound(topo, coll, nodes, model)(size))
                    if bw is not None and bound:
                        line += f"; {size >> 20} MiB {bw:.1f} GB/s, {bw / bound:.3f} of the bound"
                print(line, flush=True)
    print(f"{time.process_time() - start:.1f} CPU s", flush=True)


if __name__ == "__main__":
    main()
