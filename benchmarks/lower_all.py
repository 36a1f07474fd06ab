"""Lower every schedule of a folder in every mode and with 1, 2 and 4 instances, and verify each file.

    python benchmarks/lower_all.py [FOLDER ...] [--instances 1 2 4] [--protocol Simple] [--jobs 2] [--json out.json]

FOLDER defaults to ../shared/corpus/sccl-json (any folder of schedule JSON works, e.g. the output of
`smtcoll synth -o`). A schedule the schedule checker rejects is counted as `rejected` (lowering refuses it,
as it should); a collective the runtimes cannot express as `cannot-lower`. Every other case must verify
with every runtime it is written for: those that do not are listed as failures (exit code 1). For
reduce-scatter, whose spelling differs between the runtimes, a second file is written for the legacy
runtime. Times are CPU seconds of this process (lowering, then checking), summed per schedule.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from smtcoll.errors import SmtcollError  # noqa: E402
from smtcoll.formats import load_schedule  # noqa: E402
from smtcoll.lower import CannotLower, LowerOptions, RejectedSchedule, lower, verify_lowered  # noqa: E402
from smtcoll.msccl.writer import write_program  # noqa: E402

MODES = ("outofplace", "inplace", "both")
DEFAULT = REPO.parent / "shared" / "corpus" / "sccl-json"


def one(path: str, instances: list[int], protocol: str) -> dict[str, Any]:
    """Every mode x instances case of one schedule."""
    out: dict[str, Any] = {"file": path, "cases": [], "lower_s": 0.0, "verify_s": 0.0}
    try:
        schedule = load_schedule(path)
    except SmtcollError as e:
        out["error"] = str(e)
        return out
    with tempfile.TemporaryDirectory(prefix="lower-all-") as tmp:
        for mode in MODES:
            for count in instances:
                runtimes = ["auto"]
                for i, runtime in enumerate(runtimes):
                    case: dict[str, Any] = {"mode": mode, "instances": count, "runtime": runtime}
                    t0 = time.process_time()
                    try:
                        lowered = lower(schedule, LowerOptions(count, protocol, runtime, mode))
                    except RejectedSchedule as e:
                        case.update(status="rejected", message=str(e)[:200])
                        out["cases"].append(case)
                        continue
                    except CannotLower as e:
                        case.update(status="cannot-lower", message=str(e)[:200])
                        out["cases"].append(case)
                        continue
                    t1 = time.process_time()
                    xml = Path(tmp) / f"{mode}-{count}-{i}.xml"
                    xml.write_text(write_program(lowered.program))
                    ok, report = verify_lowered(lowered, xml)
                    t2 = time.process_time()
                    out["lower_s"] += t1 - t0
                    out["verify_s"] += t2 - t1
                    case.update(status="ok" if ok else "failed", kind=lowered.layout.kind,
                                runtimes=list(lowered.runtimes), stats=lowered.stats)
                    if not ok:
                        case["violations"] = [f"{v.code}: {v.message}" for v in report.violations
                                              if v.severity == "error"][:5]
                    if runtime == "auto" and lowered.runtimes == ("executor",) and lowered.layout.kind == "reducescatter":
                        runtimes.append("legacy")
                    out["cases"].append(case)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", default=[str(DEFAULT)])
    ap.add_argument("--instances", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--protocol", default="Simple", choices=["Simple", "LL", "LL128"])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="write every case to this JSON file")
    args = ap.parse_args()
    files = sorted({str(p) for f in args.folders for p in (Path(f).rglob("*.json") if Path(f).is_dir() else [Path(f)])})
    start = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one, files, [args.instances] * len(files), [args.protocol] * len(files)))
    else:
        results = [one(f, args.instances, args.protocol) for f in files]
    wall = time.perf_counter() - start
    totals: dict[str, int] = {}
    failures = []
    print(f"{'schedule':<58} {'kind':<13} {'cases':>5} {'ok':>4} {'tbs':>5} {'steps':>6} {'max/tb':>6} "
          f"{'scratch':>7} {'nops':>5} {'fused':>5} {'lower s':>8} {'verify s':>8}")
    for r in results:
        cases = r["cases"]
        for c in cases:
            totals[c["status"]] = totals.get(c["status"], 0) + 1
            if c["status"] == "failed":
                failures.append((r["file"], c))
        base = next((c for c in cases if c.get("stats") and c["mode"] == "outofplace" and c["instances"] == 1), None)
        s = base["stats"] if base else {}
        kind = base["kind"] if base else (cases[0]["status"] if cases else r.get("error", "?")[:13])
        print(f"{Path(r['file']).name[:58]:<58} {kind:<13} {len(cases):>5} "
              f"{sum(c['status'] == 'ok' for c in cases):>4} {s.get('thread_blocks', '-'):>5} {s.get('steps', '-'):>6} "
              f"{s.get('max_tb_steps', '-'):>6} {s.get('scratch_chunks', '-'):>7} {s.get('nops', '-'):>5} "
              f"{s.get('fused', '-'):>5} {r['lower_s']:>8.2f} {r['verify_s']:>8.2f}")
    print(f"{len(files)} schedule(s), {sum(totals.values())} case(s): "
          + ", ".join(f"{v} {k}" for k, v in sorted(totals.items())) + f"; wall {wall:.1f} s")
    for f, c in failures:
        print(f"FAILED {f} {c['mode']} x{c['instances']} {c['runtime']}: " + "; ".join(c.get("violations", [])))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 1 if failures or any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
