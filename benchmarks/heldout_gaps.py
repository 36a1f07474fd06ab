"""The held-out construction gaps of issue 24 (session 13): `smtcoll synth` with its defaults on held-out machines
against the bound it reports and the strongest bound `smtcoll bounds` proves, with CPU s and peak MB.

    python benchmarks/heldout_gaps.py [--root TREE] [--only SUBSTRING] [--regression] [--no-bounds] [--json OUT]

--root runs another checkout's smtcoll (the before of a before/after: `git archive HEAD | tar -x -C /tmp/base`).
--regression runs REGRESSION (other node counts and switch machines, Alltoall, Allgather, Gather, Scatter)
instead of GAPS. Each command runs in a child process; CPU (user + system) and peak RSS from os.wait4.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from synth_scale import child, strongest  # this folder is the script's path[0]

HERE = Path(__file__).resolve().parent
H = "benchmarks/topologies/heldout"
GAPS = [f"-t {H}/fattree4x4.toml -c gather", f"-t {H}/fattree4x4.toml -c scatter",
        f"-t {H}/fattree4x4.toml -c gather --chunks 8",
        f"-t {H}/nvl36.toml --nodes 2 -c alltoall", f"-t {H}/nvl36.toml --nodes 2 -c allgather",
        f"-t {H}/torus2x2x4z.toml -c allgather --chunks 8"]
MACHINES = [f"-t {H}/nvl36.toml --nodes 3", f"-t {H}/nvl72.toml", f"-t {H}/sw2x3.toml --nodes 2",
            f"-t {H}/h100rail4.toml", f"-t {H}/fattree4x4.toml", "-t dgx2 --nodes 2", "-t dgx2 --nodes 3", "-t dgx2 --nodes 4",
            "-t a100 --nodes 2", "-t a100 --nodes 3", "-t a100 --nodes 4"]
REGRESSION = [f"{m} -c {c}" for m in MACHINES for c in ("alltoall", "allgather", "gather", "scatter")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=HERE.parent)
    ap.add_argument("--only", default="")
    ap.add_argument("--regression", action="store_true")
    ap.add_argument("--no-bounds", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rows = []
    print("| command | steps | rounds | bound (synth) | strongest (`bounds`) | exit | CPU s | MB | method |")
    print("|---|---|---|---|---|---|---|---|---|")
    for inst in REGRESSION if a.regression else GAPS:
        if a.only not in inst:
            continue
        out, code, cpu, mb = child([sys.executable, "-m", "smtcoll", "synth", *shlex.split(inst), "--format", "json"],
                                   a.root)
        try:
            d = json.loads(out)
        except json.JSONDecodeError:
            d = {}
        lb = d.get("lower_bound") or {}
        best = None
        if not a.no_bounds:
            bout, _, _, _ = child([sys.executable, "-m", "smtcoll", "bounds", *shlex.split(inst), "--format", "json"],
                                  a.root)
            best = strongest(bout)
        row = {"cmd": inst, "steps": d.get("steps"), "rounds": d.get("rounds"), "bound": lb.get("least_steps"),
               "strongest": best, "rc": code, "cpu": round(cpu, 2), "mb": round(mb), "method": d.get("method")}
        rows.append(row)
        print(f"| `synth {inst.replace(H + '/', '')}` | {row['steps']} | {row['rounds']} | {row['bound']} | "
              f"{best if best is not None else '-'} | {code} | {row['cpu']} | {row['mb']} | {row['method']} |",
              flush=True)
    if a.json:
        a.json.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


if __name__ == "__main__":
    main()
