"""The held-out survey: every command a user runs, with defaults, on machines the project was not tuned on.

    python benchmarks/heldout.py [--machines h100:1,h100:2,...] [--collectives allgather,...] [--chunks 1,8]
                                 [--cpu-limit 180] [--json out.jsonl] [--certificates] [--size 1GiB]

For each machine (a file of benchmarks/topologies/heldout/ or a built-in name, with a node count) and
collective: `smtcoll bounds`, `smtcoll synth -o s.json --xml s.xml` with the defaults (and with each
`--chunks C` given), then `smtcoll verify` of both files; a second default synth compares bytes
(determinism). With `--certificates`: `smtcoll bounds --size SIZE --certificate DIR`, `smtcoll proof check` of
every certificate written, and of a copy of each with one number changed (it must be refused, exit 1).
With `--sweep`: `smtcoll sweep -c allgather,allreduce -o D --workers 1` per machine, twice (a fresh cache each
time); a row records every predicted point against NCCL's best and the bound (sizes slower than NCCL, below the
bound), the report's WARNING lines, and whether the two directories and reports hold the same bytes.
Each command runs under a CPU limit (`ulimit -t`) and `/usr/bin/time`; a row records the exit code,
CPU s, peak MB, the schedule's steps / rounds / chunks, and the bound's least steps and rounds per chunk.
A finding is flagged: a traceback or exit 70, an exit code other than 0 (or 4 for --xml), a schedule
below its bound, a file that does not verify, output that differs between two runs, a certificate refused
or a changed one accepted, a sweep size slower than NCCL or predicted below its bound, a sweep that differs.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOPOS = HERE / "topologies" / "heldout"
DEFAULT_MACHINES = ("h100:1,h100:2,nvbridge4:1,nvbridge4:2,pcie2s8:1,pcie2s8:2,shared2nic8:1,shared2nic8:2,"
                    "mixring6:1,mixring6:3,nvl72:1")
COLLECTIVES = "allgather,reducescatter,allreduce,alltoall,broadcast,reduce,gather,scatter"


def run(args: list[str], cwd: Path, cpu: int) -> dict:
    """One smtcoll command under a CPU limit; exit code, CPU s, peak MB, stdout (JSON when asked), stderr tail."""
    cmd = " ".join(["ulimit -t", str(cpu), ";", "/usr/bin/time", "-f", "'TIME %U %S %M'", sys.executable, "-m",
                    "smtcoll", *[f"'{a}'" for a in args]])
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                       env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    m = re.search(r"TIME ([\d.]+) ([\d.]+) (\d+)", p.stderr)
    err = [l for l in p.stderr.splitlines() if not l.startswith(("TIME", "Command "))]
    rc = p.returncode
    return {"rc": rc, "cpu": round(float(m.group(1)) + float(m.group(2)), 2) if m else None,
            "mb": round(int(m.group(3)) / 1024) if m else None, "out": p.stdout,
            "err": err[-3:], "traceback": "Traceback" in p.stderr}


def _untimed(out: str) -> str:
    """The output without its timings (the only lines allowed to differ between runs)."""
    return "\n".join(l for l in out.splitlines() if '"seconds"' not in l)


def _tampered(cert: dict) -> dict | None:
    """The certificate with the first number of its witness changed (+1), or None when it has none."""
    w = cert.get("witness")
    stack: list = [w]
    while stack:
        x = stack.pop()
        items = list(x.items()) if isinstance(x, dict) else list(enumerate(x)) if isinstance(x, list) else []
        for k, v in items:
            if isinstance(v, bool):
                continue
            if isinstance(v, int):
                x[k] = v + 1
                return cert
            if isinstance(v, str) and re.fullmatch(r"\d+(/\d+)?", v):
                x[k] = str(int(v.split("/")[0]) + 1) + v[len(v.split("/")[0]):]
                return cert
            stack.append(v)
    return None


def certificates(base: list[str], coll: str, size: str, cpu: int, work: Path) -> list[dict]:
    """bounds --size with certificates, each re-checked, then each with one number changed (must be refused)."""
    d = work / "cert"
    b = run(["bounds", *base, "-c", coll, "--size", size, "--certificate", "cert", "--format", "json"], work, cpu)
    row: dict = {"cmd": f"bounds --size {size}", "rc": b["rc"], "cpu": b["cpu"], "mb": b["mb"], "err": b["err"],
                 "traceback": b["traceback"]}
    try:
        bj = json.loads(b["out"])
        row["busbw_gbps"] = (bj.get("time_bound") or {}).get("max_busbw_gbps")
    except ValueError:
        pass
    rows = [row]
    files = sorted(d.glob("*.json")) if d.exists() else []
    for f in files:
        c = run(["proof", "check", f"cert/{f.name}"], work, cpu)
        rows.append({"cmd": f"proof check {f.name}", "rc": c["rc"], "cpu": c["cpu"], "mb": c["mb"], "err": c["err"],
                     "traceback": c["traceback"]})
        bad = _tampered(json.loads(f.read_text()))
        if bad is not None:
            t = work / f"tampered-{f.name}"
            t.write_text(json.dumps(bad))
            c = run(["proof", "check", t.name], work, cpu)
            rows.append({"cmd": f"proof check tampered {f.name}", "rc": c["rc"], "cpu": c["cpu"], "mb": c["mb"],
                         "err": c["err"], "traceback": c["traceback"], "refused": c["rc"] == 1})
    return rows


def survey(machine: str, nodes: int, coll: str, chunks: list[int], cpu: int, work: Path,
           size: str | None = None) -> list[dict]:
    topo = str(TOPOS / f"{machine}.toml") if (TOPOS / f"{machine}.toml").exists() else machine
    base = ["-t", topo, "--nodes", str(nodes)] if nodes > 1 else ["-t", topo]
    rows: list[dict] = []
    b = run(["bounds", *base, "-c", coll, "--format", "json"], work, cpu)
    bound: dict = {}
    try:
        bj = json.loads(b["out"])
        bound = {"steps": bj.get("steps", {}).get("value"), "rounds": bj.get("rounds", {}).get("value")}
    except ValueError:
        pass
    rows.append({"cmd": "bounds", "rc": b["rc"], "cpu": b["cpu"], "mb": b["mb"], "err": b["err"],
                 "traceback": b["traceback"], **bound})
    if size:
        rows.extend(certificates(base, coll, size, cpu, work))
    for c in [None, *chunks]:
        extra = [] if c is None else ["--chunks", str(c)]
        tag = "default" if c is None else f"c{c}"
        s = run(["synth", *base, "-c", coll, *extra, "--format", "json", "-o", f"{tag}.json", "--xml",
                 f"{tag}.xml", "-f"], work, cpu)
        row = {"cmd": f"synth {tag}", "rc": s["rc"], "cpu": s["cpu"], "mb": s["mb"], "err": s["err"],
               "traceback": s["traceback"]}
        try:
            sj = json.loads(s["out"])
            lb = sj.get("lower_bound") or {}
            row.update(steps=sj.get("steps"), rounds=sj.get("rounds"), chunks=sj.get("chunks"),
                       method=sj.get("method"), lb_steps=lb.get("least_steps"),
                       lb_rpc=lb.get("rounds_per_chunk_exact"))
        except ValueError:
            pass
        for f in (f"{tag}.json", f"{tag}.xml"):
            if (work / f).exists():
                v = run(["verify", f], work, cpu)
                row[f"verify_{f.split('.')[-1]}"] = v["rc"]
                if v["rc"] != 0:
                    row.setdefault("verify_err", []).extend(v["err"] + v["out"].splitlines()[-3:])
                (work / f).rename(work / f"{f}.kept")
        if c is None and s["rc"] == 0:
            (work / "again").mkdir(exist_ok=True)
            again = run(["synth", *base, "-c", coll, "--format", "json", "-o", f"{tag}.json", "--xml",
                         f"{tag}.xml", "-f"], work / "again", cpu)
            row["same_bytes"] = (_untimed(again["out"]) == _untimed(s["out"]) and all(
                (work / "again" / f).exists() and (work / f"{f}.kept").exists()
                and (work / "again" / f).read_bytes() == (work / f"{f}.kept").read_bytes()
                for f in (f"{tag}.json", f"{tag}.xml")))
            if not row["same_bytes"]:  # where the two runs part: the first differing line of each output
                pairs = [(_untimed(s["out"]), _untimed(again["out"]), "stdout")] + [
                    ((work / f"{f}.kept").read_text(), (work / "again" / f).read_text(), f)
                    for f in (f"{tag}.json", f"{tag}.xml")
                    if (work / "again" / f).exists() and (work / f"{f}.kept").exists()]
                row["differs"] = [(name, x, y) for one, two, name in pairs
                                  for x, y in zip(one.splitlines(), two.splitlines()) if x != y][:3]
        rows.append(row)
    for r in rows:
        r.update(machine=machine, nodes=nodes, collective=coll)
    return rows


def sweep(machine: str, nodes: int, cpu: int, work: Path) -> dict:
    """`smtcoll sweep -c allgather,allreduce` twice; the report read as a user would read it."""
    topo = str(TOPOS / f"{machine}.toml") if (TOPOS / f"{machine}.toml").exists() else machine
    base = ["-t", topo, "--nodes", str(nodes)] if nodes > 1 else ["-t", topo]
    runs = [run(["sweep", *base, "-c", "allgather,allreduce", "-o", f"D{i}", "--workers", "1"], work, cpu)
            for i in (1, 2)]
    row: dict = {"cmd": "sweep", "rc": [r["rc"] for r in runs], "cpu": [r["cpu"] for r in runs],
                 "mb": [r["mb"] for r in runs], "err": runs[0]["err"], "traceback": any(r["traceback"] for r in runs),
                 "machine": machine, "nodes": nodes, "collective": "allgather,allreduce"}
    man = work / "D1.sweep" / "manifest.json"
    if not man.exists():
        return row
    manifest = json.loads(man.read_text())
    report = (work / "D1.sweep" / "report.txt").read_text()
    slower, below, ratios, of_bound = [], [], [], []
    for f in manifest["files"]:
        for p in f["predicted"]:
            where = f"{f['collective']} {p['bytes']}"
            if p.get("vs_nccl") is not None:
                ratios.append(p["vs_nccl"])
                if p["vs_nccl"] < 1 - 1e-9:
                    slower.append(where)
            if p.get("bound_us"):
                of_bound.append(p["bound_us"] / p["time_us"])
                if p["time_us"] < p["bound_us"] * (1 - 1e-9):
                    below.append(where)
    files = sorted(q.name for q in (work / "D1").iterdir())
    same = files == sorted(q.name for q in (work / "D2").iterdir()) and all(
        (work / "D1" / n).read_bytes() == (work / "D2" / n).read_bytes() for n in files) and report == (
        work / "D2.sweep" / "report.txt").read_text()
    row.update(files=len(files), slower_than_nccl=slower[:10], below_bound=below[:10],
               vs_nccl=[round(min(ratios), 3), round(max(ratios), 3)] if ratios else None,
               of_bound=[round(min(of_bound), 3), round(max(of_bound), 3)] if of_bound else None,
               warnings=[l for l in report.splitlines() if "WARNING" in l][:5],
               failed=[l for l in report.splitlines() if l.startswith("FAILED")][:5], same_bytes=same)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machines", default=DEFAULT_MACHINES)
    ap.add_argument("--collectives", default=COLLECTIVES)
    ap.add_argument("--chunks", default="1,8", help="extra --chunks values per synth ('' for none)")
    ap.add_argument("--cpu-limit", type=int, default=180, help="per command (a sweep: set it higher)")
    ap.add_argument("--json", type=Path, help="append one JSON line per row")
    ap.add_argument("--certificates", action="store_true",
                    help="also bounds --size SIZE --certificate, proof check of each and of a changed copy")
    ap.add_argument("--size", default="1GiB", help="the size of --certificates (default 1GiB)")
    ap.add_argument("--sweep", action="store_true",
                    help="only `smtcoll sweep -c allgather,allreduce` per machine, twice (report, bytes)")
    args = ap.parse_args()
    chunks = [int(c) for c in args.chunks.split(",") if c]
    for spec in args.machines.split(","):
        machine, _, n = spec.partition(":")
        if args.sweep:
            with tempfile.TemporaryDirectory() as d:
                line = json.dumps(sweep(machine, int(n or 1), args.cpu_limit, Path(d)), sort_keys=True)
            print(line, flush=True)
            if args.json:
                with args.json.open("a") as f:
                    f.write(line + "\n")
            continue
        for coll in args.collectives.split(","):
            with tempfile.TemporaryDirectory() as d:
                rows = survey(machine, int(n or 1), coll, chunks, args.cpu_limit, Path(d),
                              args.size if args.certificates else None)
            for r in rows:
                line = json.dumps(r, sort_keys=True)
                print(line, flush=True)
                if args.json:
                    with args.json.open("a") as f:
                        f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
