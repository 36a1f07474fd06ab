"""One-chunk Allreduce on every small torus and ring (issue 24, session 9): the engine's steps against the
strongest bound it reports, every schedule through the checker; with --baseline, the same sweep on another
tree of smtcoll (`git archive COMMIT | tar -x -C DIR`) in a child process, and the rows that differ.

    python benchmarks/odd_tori_sweep.py [--baseline DIR] [--json out.json]

Instances: torus2d:AxB for 2 <= A <= B <= 13; torus3d:AxBxC for A in {2, 3, 5, 7}, A <= B <= 7, B <= C <= 11;
ring:3..40. Prints the rows above 1.5x of the bound, the rows that differ from the baseline, CPU s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def instances() -> list[str]:
    out = [f"torus2d:{a}x{b}" for a in range(2, 14) for b in range(a, 14)]
    out += [f"torus3d:{a}x{b}x{c}" for a in (2, 3, 5, 7) for b in range(a, 8) for c in range(b, 12)]
    return out + [f"ring:{n}" for n in range(3, 41)]


def sweep(root: Path) -> dict[str, list]:
    sys.path.insert(0, str(root))
    from smtcoll import library
    from smtcoll.check.schedule import check_schedule
    from smtcoll.synth.scale import engine

    out: dict[str, list] = {}
    for name in instances():
        t = library.topology(name, 1)
        c0 = time.process_time()
        r = engine.synthesize(t, library.collective("allreduce", t.ranks))
        verdict = check_schedule(r.schedule).verdict
        out[name] = [len(r.schedule.steps), r.bounds.least_steps(True, 1), verdict,
                     round(time.process_time() - c0, 2)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, help="another tree of smtcoll to compare with")
    ap.add_argument("--json", type=Path, help="write {instance: [steps, bound, verdict, CPU s]}")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # a tree to sweep, the result as JSON
    args = ap.parse_args()
    if args.child:
        print(json.dumps(sweep(args.child)))
        return
    c0 = time.process_time()
    now = sweep(ROOT)
    cpu = time.process_time() - c0
    if args.json:
        args.json.write_text(json.dumps(now, indent=1) + "\n")
    over = [(k, v) for k, v in now.items() if v[0] > 1.5 * v[1]]
    bad = [k for k, v in now.items() if v[2] != "ok"]
    print(f"{len(now)} instances, {cpu:.1f} CPU s; rejected by the checker: {bad or 'none'}; "
          f"above 1.5x of the bound: {[f'{k} {v[0]} ({v[1]})' for k, v in over] or 'none'}")
    if args.baseline:
        r = subprocess.run([sys.executable, __file__, "--child", str(args.baseline)], capture_output=True, text=True,
                           check=True)
        before = json.loads(r.stdout)
        longer = [f"{k} {before[k][0]} -> {v[0]}" for k, v in now.items() if v[0] > before[k][0]]
        shorter = [f"{k} {before[k][0]} -> {v[0]}" for k, v in now.items() if v[0] < before[k][0]]
        was_over = [k for k, v in before.items() if v[0] > 1.5 * v[1]]
        print(f"baseline: {len(was_over)} above 1.5x; longer now: {longer or 'none'}; shorter now: {len(shorter)}")
        for line in shorter:
            print("  " + line)


if __name__ == "__main__":
    main()
