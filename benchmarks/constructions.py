"""The throughput constructions (`smtcoll.synth.constructions`) on the built-in machines, in the sweep's
cost model (`smtcoll/sweep/cost.py`): per construction its C, steps, rounds and the bus bandwidth at
1 MiB, 16 MiB and 1 GiB (the best protocol and instance count), and per machine the CPU seconds and peak
memory of building and checking all of them (a child process per machine; os.wait4).

    python benchmarks/constructions.py [--only SUBSTRING] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MACHINES = [("dgx1", 1), ("ndv2", 2), ("ndv2", 4), ("dgx2", 1), ("dgx2", 2), ("a100", 1), ("a100", 2),
            ("mi250", 1), ("mi250", 2)]
COLLECTIVES = ("allgather", "reducescatter", "allreduce", "alltoall")
SIZES = (1 << 20, 1 << 24, 1 << 30)
CHILD = """
import json, sys
from smtcoll import library
from smtcoll.synth.constructions import constructions
from smtcoll.sweep.cost import bus_bandwidth, schedule_time
name, nodes = sys.argv[1], int(sys.argv[2])
topo = library.topology(name, nodes)
rows = []
for kind in sys.argv[3].split(","):
    for c in constructions(topo, library.collective(kind, topo.ranks)):
        bw = []
        for size in map(int, sys.argv[4].split(",")):
            times = [schedule_time(c.schedule, p, i, size, nodes=nodes) for p in ("LL", "Simple") for i in (1, 8)]
            bw.append(max(bus_bandwidth(kind, topo.ranks, size, t) or 0 for t in times if t is not None))
        rows.append({"kind": kind, "name": c.name, "nccl": c.nccl, "chunks": c.chunks,
                     "steps": len(c.schedule.steps), "rounds": c.schedule.rounds, "busbw": bw})
print(json.dumps(rows))
"""


def run(name: str, nodes: int) -> tuple[list[dict], float, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, name, str(nodes), ",".join(COLLECTIVES),
                             ",".join(map(str, SIZES))],
                            stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"{name} x{nodes}: exit status {status}")
    return json.loads(out), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args()
    lines = ["| machine | collective | construction | NCCL | C | steps | rounds | 1 MiB | 16 MiB | 1 GiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    totals = ["| machine | CPU s (all collectives) | peak MB |", "|---|---|---|"]
    for name, nodes in MACHINES:
        label = f"{name} x{nodes}"
        if args.only not in label:
            continue
        rows, cpu, peak = run(name, nodes)
        totals.append(f"| {label} | {cpu:.1f} | {peak:.0f} |")
        for r in rows:
            bw = " | ".join(f"{x:.1f}" for x in r["busbw"])
            lines.append(f"| {label} | {r['kind']} | {r['name']} | {r['nccl'] or ''} | {r['chunks']} | "
                         f"{r['steps']} | {r['rounds']} | {bw} |")
        print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n\n" + "\n".join(totals) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
