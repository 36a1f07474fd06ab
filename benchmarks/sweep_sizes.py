"""A sweep directory at sizes between the report's powers of two: is the file chosen for each size at least as
fast as NCCL's best (ring, tree or p2p, every protocol and instance count of the sweep's model) there?

    python benchmarks/sweep_sizes.py DIR [--sizes 3MiB,48MiB,100MiB,700MiB] [--mode outofplace]

DIR is the algorithm directory `smtcoll sweep -o DIR` wrote (the manifest is DIR.sweep/manifest.json). For each
collective, node count and size: the file whose range holds the size is read back from DIR as the runtime
reads it and run in the manifest's cost model (`smtcoll.sweep.cost.predict`), and NCCL's algorithms
(`smtcoll.synth.constructions`, the baselines) are lowered in the same mode with every protocol and instance
count of that model and timed the same way. A row whose file is slower than NCCL's best is marked SLOWER.
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from pathlib import Path

from smtcoll import library, specs
from smtcoll.errors import SmtcollError
from smtcoll.msccl.reader import read_program
from smtcoll.sweep import cost
from smtcoll.sweep.sizes import parse_size
from smtcoll.synth.constructions import constructions


def nccl_best(topo, coll, nodes: int, size: int, model: cost.Model, mode: str) -> tuple[Fraction | None, str]:
    """NCCL's best time at `size` (µs) over its algorithms, protocols and instance counts, and which."""
    best: tuple[Fraction | None, str] = (None, "-")
    for c in constructions(topo, coll):
        if c.nccl is None:
            continue
        for proto in model.protocols:
            for inst in model.instances:
                try:
                    t = cost.schedule_time(c.schedule, proto, inst, size, model, nodes, mode)
                except SmtcollError:
                    continue
                if t is not None and (best[0] is None or t < best[0]):
                    best = (t, f"{c.nccl} {proto} x{inst}")
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--sizes", default="3MiB,48MiB,100MiB,700MiB")
    ap.add_argument("--mode", default="outofplace", choices=("outofplace", "inplace"))
    args = ap.parse_args()
    manifest = json.loads((args.dir.parent / f"{args.dir.name}.sweep" / "manifest.json").read_text())
    model = cost.Model.from_dict(manifest["model"])
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    print("| machine | collective | size | file (algorithm, protocol x instances) | µs | NCCL best | µs | "
          "NCCL / file |")
    print("|---|---|---|---|---|---|---|---|")
    start = time.process_time()
    slower = 0
    files = [f for f in manifest["files"] if f.get("mode", "outofplace") == args.mode]
    # a file's topology is its name; the request holds what the user gave (a built-in or a .toml path)
    given = {specs.resolve_topology(t).name: t for t in manifest["request"]["topologies"]}
    for key in sorted({(f["topology"], f["nodes"], f["collective"]) for f in files}):
        label, nodes, kind = key
        topo = specs.resolve_topology(given.get(label, label), nodes)
        coll = library.collective(kind, topo.ranks)
        m = cost.machine(topo, nodes, model)
        for size in sizes:
            hold = [f for f in files if (f["topology"], f["nodes"], f["collective"]) == key
                    and f["sizes"][0] <= size <= f["sizes"][1]]
            if len(hold) != 1:
                print(f"| {label} x{nodes} | {kind} | {size} | {len(hold)} files hold this size | | | | |")
                continue
            f = hold[0]
            program = read_program(args.dir / f["file"]).program
            curve = cost.predict(program, m, model, size, size)
            ours = None if curve is None else curve.at(size)
            theirs, which = nccl_best(topo, coll, nodes, size, model, args.mode)
            ratio = "-" if ours is None or theirs is None else f"{float(theirs / ours):.3f}"
            flag = " SLOWER" if ours is not None and theirs is not None and theirs < ours else ""
            slower += bool(flag)
            print(f"| {label} x{nodes} | {kind} | {size} | {f['algorithm']}, {f['protocol']} x{f['instances']} | "
                  f"{'-' if ours is None else f'{float(ours):.1f}'} | {which} | "
                  f"{'-' if theirs is None else f'{float(theirs):.1f}'} | {ratio}{flag} |", flush=True)
    print(f"<!-- {slower} rows slower than NCCL's best; {time.process_time() - start:.1f} CPU s -->")


if __name__ == "__main__":
    main()
