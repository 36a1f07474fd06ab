"""A sweep of 20 tasks (5 topologies x 4 collectives) with 1 and with 2 Dask workers: speed-up, the
scheduler's overhead per task, and that both write the same bytes.

    python benchmarks/sweep_workers.py [--runs 3] [--json out.json]

For each worker count the whole command `smtcoll sweep ... --workers W` runs under `/usr/bin/time` with a
fresh cache (`%e %U %S %M`: wall, user and system CPU seconds of the command and every process it waited
for, i.e. the Dask workers and the tasks' child processes, and the largest resident set), median of
`--runs`. The baseline is every task's child process (`python -m smtcoll.sweep.tasks`) run one after the
other without Dask. Overhead per task = (wall with 1 worker - baseline wall) / tasks: what Dask, the cluster's
start and the manifest add per task. The machine is shared: CPU seconds are the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from smtcoll.sweep.plan import Request, make_tasks  # noqa: E402
from smtcoll.sweep.sizes import parse_range  # noqa: E402
from smtcoll.sweep.tasks import Options, Task  # noqa: E402

TOPOLOGIES = ("ring:4", "ring:5", "line:4", "hypercube:3", "dgx1")
COLLECTIVES = ("allgather", "allreduce", "alltoall", "reducescatter")
SIZES = "1KiB:1GiB"
MAX_CHUNKS = 2


def timed(cmd: list[str], stdin: str | None = None) -> tuple[float, float, int, str]:
    """(wall s, CPU s, peak KiB, stdout) of `cmd` under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        p = subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%e %U %S %M", *cmd], input=stdin,
                           capture_output=True, text=True, check=False)
        wall, user, system, peak = t.read().split()[-4:]
    return float(wall), float(user) + float(system), int(peak), p.stdout


def baseline(tasks: list[Task]) -> tuple[float, float]:
    wall = cpu = 0.0
    for t in tasks:
        w, c, _, out = timed([sys.executable, "-m", "smtcoll.sweep.tasks"], json.dumps(t.payload()))
        assert json.loads(out)["status"] == "ok", out[:300]
        wall, cpu = wall + w, cpu + c
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    request = Request(TOPOLOGIES, (1,), COLLECTIVES, Options(parse_range(SIZES), ("executor",), 60.0, MAX_CHUNKS))
    tasks = [t for t in make_tasks(request) if isinstance(t, Task)]
    n = len(tasks)
    t0 = time.monotonic()
    base_wall, base_cpu = baseline(tasks)
    print(f"{n} tasks; baseline (children one after the other, no Dask): wall {base_wall:.1f} s, "
          f"CPU {base_cpu:.1f} s")
    results, outputs = {}, {}
    for workers in (1, 2):
        runs = []
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="smtcoll-bench-") as tmp:
                out = Path(tmp) / "algos"
                cmd = [sys.executable, "-m", "smtcoll", "sweep", "-t", ",".join(TOPOLOGIES), "-c",
                       ",".join(COLLECTIVES), "--sizes", SIZES, "--max-chunks", str(MAX_CHUNKS), "-o", str(out),
                       "--workers", str(workers), "--format", "json"]
                runs.append(timed(cmd)[:3])
                outputs[workers, i] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
                outputs[workers, i]["manifest.json"] = (Path(tmp) / "algos.sweep" / "manifest.json").read_bytes()
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        peak = max(r[2] for r in runs)
        results[workers] = {"wall_s": wall, "cpu_s": cpu, "peak_kib": peak, "runs": runs}
        print(f"{workers} worker(s): wall {wall:.1f} s, CPU {cpu:.1f} s (median of {args.runs}), "
              f"peak RSS {peak / 1024:.0f} MiB")
    identical = all(o == outputs[1, 0] for o in outputs.values())
    speedup = results[1]["wall_s"] / results[2]["wall_s"]
    overhead = (results[1]["wall_s"] - base_wall) / n
    overhead_cpu = (results[1]["cpu_s"] - base_cpu) / n
    print(f"speed-up 1 -> 2 workers (wall): {speedup:.2f}x; overhead per task with 1 worker: "
          f"{overhead:.2f} s wall, {overhead_cpu:.2f} s CPU; outputs identical: {identical}; "
          f"benchmark took {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"tasks": n, "baseline": {"wall_s": base_wall, "cpu_s": base_cpu},
                                         "workers": results, "speedup": speedup, "overhead_wall_s": overhead,
                                         "overhead_cpu_s": overhead_cpu, "identical": identical}, indent=2))
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
