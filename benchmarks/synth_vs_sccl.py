"""`smtcoll synth` against SCCL's measured CPU seconds (../shared/docs/sccl-baseline.json) and the tori of
peers.md.

Every instance runs as the whole command `python -m smtcoll synth <args> --format json` in a child
process; its CPU seconds (user + system) and peak RSS come from os.wait4 on that child (the per-child
form of getrusage(RUSAGE_CHILDREN)). Median of 3 runs (1 run for instances slower than 10 s).
Run one benchmark at a time on a shared machine.

    python benchmarks/synth_vs_sccl.py [--baseline PATH] [--only SUBSTRING] [--tori] [--torus8]
        [--timeout S] [--markdown OUT.md] [--save DIR]

With --save DIR every found schedule is written to DIR (the synthesis benchmark set for
`benchmarks/lower_all.py DIR`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT.parent / "shared" / "docs" / "sccl-baseline.json"
TORI = [
    ("-t torus2d:3x3 -c allgather", 2), ("-t torus2d:4x4 -c allgather", 4), ("-t torus2d:5x5 -c allgather", 6),
    ("-t torus2d:6x6 -c allgather", 9), ("-t torus2d:4x8 -c allgather", 8), ("-t mesh2d:4x4 -c allgather", 8),
]


def measure(args: str, timeout: float, runs: int, save: Path | None = None) -> dict:
    cpu, rss, last = [], [], None
    for i in range(runs):
        cmd = [sys.executable, "-m", "smtcoll", "synth", *shlex.split(args), "--format", "json",
               "--timeout", str(timeout)]
        if save is not None and i == 0:
            slug = "_".join(x.lstrip("-").replace(":", "") for x in shlex.split(args))
            cmd += ["-o", str(save / f"{slug}.json")]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # os.wait4 gives this child's own rusage (peak RSS of this child, not the max over all children)
        stdout_data = proc.stdout.read()
        stderr_data = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out, err = stdout_data, stderr_data
        cpu.append(usage.ru_utime + usage.ru_stime)
        rss.append(usage.ru_maxrss / 1024)
        last = (proc.returncode, out, err)
        if i == 0 and cpu[0] > 10:
            break
    code, out, err = last
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        data = {"status": "error", "message": err.strip()[-300:]}
    return {"args": args, "code": code, "cpu_s": statistics.median(cpu), "runs": len(cpu),
            "rss_mb": max(rss), "result": summarize(data)}


def summarize(d: dict) -> str:
    st = d.get("status")
    if d.get("strategy") == "pareto" and d.get("points"):
        pts = ", ".join(f"({p['steps']},{p['rounds']},{p['chunks']})" for p in d["points"])
        return f"{st}: {len(d['points'])} points {pts}" + ("" if d.get("optimal", {}).get("proved") else " (incomplete)")
    if st == "found":
        return f"found: {d['steps']} steps, {d['rounds']} rounds, C={d['chunks']}"
    return f"{st}: {d.get('message', '')}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, default=BASELINE)
    ap.add_argument("--only", default="")
    ap.add_argument("--tori", action="store_true", help="also the 2D tori/mesh of peers.md")
    ap.add_argument("--torus8", action="store_true", help="only the 8x8 torus experiment (long)")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--save", type=Path, help="write every found schedule into this folder")
    ns = ap.parse_args()
    if ns.save:
        ns.save.mkdir(parents=True, exist_ok=True)
    rows = []
    if ns.torus8:
        jobs = [("-t torus2d:8x8 -c allgather --strategy instance --steps 16", None, "open: 16 or 17")]
    else:
        base = json.loads(ns.baseline.read_text())
        jobs = [(e["args"], e["sccl_cpu_s"], e["result"]) for e in base["solved"]]
        jobs += [(e["args"], None, f"no answer in {e['sccl_limit_s']} s") for e in base["unanswered"]]
        if ns.tori:
            jobs += [(a, None, f"optimal {s} steps (peers.md)") for a, s in TORI]
    for args, sccl, expected in jobs:
        if ns.only and ns.only not in args:
            continue
        r = measure(args, ns.timeout, ns.runs, ns.save)
        r["sccl_cpu_s"], r["sccl_result"] = sccl, expected
        if sccl:
            r["ratio"] = r["cpu_s"] / sccl
        rows.append(r)
        print(f"{r['cpu_s']:8.2f} s {r['rss_mb']:7.0f} MB  exit {r['code']}  {args}  ->  {r['result']}"
              f"   [SCCL: {expected}, {sccl if sccl is not None else '-'} s]", flush=True)
    if ns.markdown:
        lines = ["| command (`smtcoll synth ...`) | result | CPU s (median) | peak RSS MB | SCCL CPU s | SCCL result |"
                 " ratio |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            ratio = f"{r['ratio']:.3f}" if r.get("ratio") is not None else "-"
            lines.append(f"| `{r['args']}` | {r['result']} (exit {r['code']}) | {r['cpu_s']:.2f} ({r['runs']} run"
                         f"{'s' if r['runs'] > 1 else ''}) | {r['rss_mb']:.0f} | "
                         f"{r['sccl_cpu_s'] if r['sccl_cpu_s'] is not None else '-'} | {r['sccl_result']} | {ratio} |")
        ns.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
