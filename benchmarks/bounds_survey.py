"""Survey `smtcoll bounds` on every built-in machine and held-out file: exit code, CPU s, peak MB, the bounds.

    python benchmarks/bounds_survey.py [--machines dgx1:1,2,4 ...] [--collectives a,b] [--size 1GiB | --size ""]
                                       [--cap 300] [--json FILE]

One `smtcoll bounds ... --format json` process per row, one at a time, under `/usr/bin/time` (CPU user +
system, peak RSS) and a wall-clock cap (a row that hits it is a finding: rc "cap"). A row records the rounds,
steps and LP bounds, and the physical time bound's µs per byte (an exact fraction) and bus bandwidth: two runs
of two versions of the code give the same bounds, or one of them is weaker (docs/benchmarks.md, "Bounds on
switch machines (session 12)"). `--size` changes only the step-synchronous time row (no extra work).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "benchmarks" / "topologies" / "heldout"
BUILTIN = ("dgx1", "ndv2", "dgx2", "a100", "mi250", "amd8")
COLLECTIVES = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "reduce", "gather", "scatter")


def default_machines() -> list[tuple[str, int]]:
    rows = [(m, n) for m in BUILTIN for n in (1, 2, 4)]
    rows += [(str(p.relative_to(REPO)), n) for p in sorted(HELDOUT.glob("*.toml")) for n in (1, 2)]
    return rows


def parse_machines(spec: list[str]) -> list[tuple[str, int]]:
    out = []
    for item in spec:
        name, _, nodes = item.partition(":")
        path = HELDOUT / f"{name}.toml"
        topo = str(path.relative_to(REPO)) if path.exists() else name
        out += [(topo, int(n)) for n in (nodes or "1").split(",")]
    return out


def run(topo: str, nodes: int, coll: str, size: str, cap: float) -> dict[str, object]:
    cmd = [sys.executable, "-m", "smtcoll", "bounds", "-t", topo, "--nodes", str(nodes), "-c", coll,
           "--format", "json", *(["--size", size] if size else [])]
    row: dict[str, object] = {"topology": topo, "nodes": nodes, "collective": coll, "size": size or None}
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        try:
            p = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%U %S %M", *cmd], capture_output=True,
                               text=True, timeout=cap, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        except subprocess.TimeoutExpired:
            row.update(rc="cap", cpu_s=None, peak_mb=None)
            return row
        user, system, kb = tf.read().split()[-3:]
    row.update(rc=p.returncode, cpu_s=round(float(user) + float(system), 2), peak_mb=round(int(kb) / 1024))
    if p.returncode != 0:
        row["error"] = (p.stderr.strip().splitlines() or [""])[-1][:200]
        return row
    d = json.loads(p.stdout)
    for k in ("steps", "rounds", "lp", "setcut"):
        row[k] = d[k]["value"] if isinstance(d.get(k), dict) else None
    lw = d["lp"].get("witness", {})
    row["lp_how"] = lw.get("solver") or d["lp"].get("note")
    row["lp_variables"] = lw.get("variables")
    row["rounds_from"] = d["rounds"]["witness"].get("from")
    rpc = d["rounds_per_chunk"]
    row["rounds_per_chunk"] = rpc.get("witness", {}).get("exact")
    row["rpc_from"] = rpc.get("witness", {}).get("from")
    tb = d["time_bound"]
    row.update(us_per_byte=tb["us_per_byte"], max_busbw_gbps=tb["max_busbw_gbps"],
               kind=(tb.get("certificate") or {}).get("bound"))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--machines", nargs="*", help="NAME:N1,N2 (a built-in or a held-out file's stem)")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES))
    ap.add_argument("--size", default="1GiB", help='"" for the defaults')
    ap.add_argument("--cap", type=float, default=300.0, help="wall-clock seconds per run")
    ap.add_argument("--json", type=Path, help="append one JSON line per row")
    args = ap.parse_args()
    machines = parse_machines(args.machines) if args.machines else default_machines()
    for topo, nodes in machines:
        for coll in args.collectives.split(","):
            row = run(topo, nodes, coll, args.size, args.cap)
            line = json.dumps(row, sort_keys=True)
            print(line, flush=True)
            if args.json:
                with args.json.open("a") as f:
                    f.write(line + "\n")


if __name__ == "__main__":
    main()
