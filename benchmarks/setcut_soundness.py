"""The rank-set cut bound against schedules that verify: never above them, on every machine and collective.

    python benchmarks/setcut_soundness.py [--machines dgx1:1,...] [--collectives allgather,...] [--chunks 1,2]
                                          [--exact] [--json out.jsonl]

For each machine (a built-in name or a file of benchmarks/topologies/heldout/, with a node count), collective
and chunk count: `bounds.setcut_bound` (its witness re-checked by `check_witness`), the large-instance engine's
schedule (checked by the checker before it is returned) and, with `--exact`, the exact search's least steps
on instances of at most 8 ranks (one round per step, so its steps are rounds). A row is a FINDING when the
bound exceeds the rounds of a schedule: the bound would be wrong. Also compares `search_bounds` with main's
functions without the set cuts (`least_steps` never lower).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
TOPOS = HERE / "topologies" / "heldout"
MACHINES = ("dgx1:1,ndv2:1,ndv2:2,ndv2:4,dgx2:1,dgx2:2,a100:1,a100:2,mi250:1,mi250:2,amd8:1,ring:8:1,torus2d:4x4:1,"
            "hypercube:4:1,star:8:1,line:6:1,h100:1,h100:2,nvbridge4:1,nvbridge4:2,pcie2s8:1,pcie2s8:2,"
            "shared2nic8:1,shared2nic8:2,mixring6:1,mixring6:3,nvl72:1")
COLLECTIVES = "allgather,reducescatter,alltoall,allreduce,broadcast,reduce,gather,scatter"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default=MACHINES)
    ap.add_argument("--collectives", default=COLLECTIVES)
    ap.add_argument("--chunks", default="1,2")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--exact-timeout", type=float, default=30.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from smtcoll import specs
    from smtcoll.bounds import check_witness, search_bounds, setcut_bound
    from smtcoll.errors import SmtcollError
    from smtcoll.synth.door import engine_result

    findings = 0
    out = args.json.open("w") if args.json else None
    for m in args.machines.split(","):
        name, _, nodes = m.rpartition(":")
        path = TOPOS / f"{name}.toml"
        topo = specs.resolve_topology(str(path) if path.exists() else name, int(nodes))
        for cname in args.collectives.split(","):
            for chunks in (int(c) for c in args.chunks.split(",")):
                root = 0 if cname in ("broadcast", "reduce", "gather", "scatter") else None
                coll = specs.resolve_collective(cname, topo.ranks, root, 1)
                t0 = time.process_time()
                split = coll.with_chunks(chunks)
                b = setcut_bound(topo, split)
                secs = time.process_time() - t0
                checked = check_witness("setcut", {"bound": "setcut", **b.witness}, topo, split) if b.value else None
                row: dict = {"machine": m, "collective": cname, "chunks": chunks, "setcut": b.value,
                             "family": b.witness.get("family"), "setcut_cpu_s": round(secs, 3), "rechecked": checked}
                try:
                    res, _ = engine_result(topo, coll, chunks)
                    s = res.schedule
                    row["engine_steps"] = None if s is None else len(s.steps)
                    row["engine_rounds"] = None if s is None else s.rounds
                except SmtcollError as e:
                    row["engine_error"] = str(e)[:120]
                if args.exact and topo.ranks <= 8 and chunks == 1:
                    from smtcoll.synth.exact import strategies

                    ex = strategies.least_steps(topo, coll, timeout=args.exact_timeout)
                    row["exact_steps"] = len(ex.schedule.steps) if ex.schedule is not None else None
                    row["exact_proved"] = bool(ex.optimal.proved)
                sb = search_bounds(topo, split)
                row["least_steps"] = sb.least_steps(True, chunks)
                bad = [k for k in ("engine_rounds", "exact_steps") if row.get(k) is not None and b.value is not None
                       and b.value > row[k]]
                if bad or (checked is not None and checked != b.value):
                    row["FINDING"] = bad or "recheck differs"
                    findings += 1
                print(json.dumps(row), flush=True)
                if out:
                    out.write(json.dumps(row) + "\n")
    print(f"{findings} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
