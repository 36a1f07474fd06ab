"""Schedules at scale that run (issue 24): `smtcoll synth ... -o s.json --xml s.xml` (synthesis, lowering,
the program checked from the written file), then `smtcoll verify s.json` and `smtcoll verify s.xml` from
the files alone, on torus2d Allgather at 256, 576 and 1024 ranks. Per command: exit code, CPU seconds
(user + system of the child, os.wait4) and peak RSS in MB. One run each (CPU seconds vary little).

    python benchmarks/xml_scale.py [--sides 16,24,32] [--keep DIR]
    python benchmarks/xml_scale.py --topologies torus3d:8x8x8,hypercube:10 [--keep DIR]

The XML of 1024 ranks is about 250 MB: `--keep` names a folder for the files (default: a temporary one).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def child(cmd: list[str]) -> tuple[int, float, float, str]:
    """Run `cmd`; (exit code, CPU s, peak MB, last line of its output)."""
    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:
            os.chdir(ROOT)
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            os.execvp(cmd[0], cmd)
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        lines = out.read().decode(errors="replace").strip().splitlines()
    return (os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            lines[-1] if lines else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", default="16,24,32")
    ap.add_argument("--topologies", help="comma-separated topologies instead of the torus2d sides")
    ap.add_argument("--keep", type=Path, help="folder for the schedule and XML files")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="smtcoll-xml-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    smtcoll = [sys.executable, "-m", "smtcoll"]
    print("| command | exit | CPU s | peak MB | last line |")
    print("|---|---|---|---|---|")
    names = (args.topologies.split(",") if args.topologies
             else [f"torus2d:{side}x{side}" for side in map(int, args.sides.split(","))])
    for name in names:
        tag = name.replace(":", "-")
        s, x = folder / f"ag-{tag}.json", folder / f"ag-{tag}.xml"
        from smtcoll import library

        ranks = library.topology(name).ranks
        # the reader's limits guard `verify` against hostile files; a program this size needs them raised
        lifted = ["--max-bytes", "400000000", "--max-steps", "4000000", "--max-tbs", "100000",
                  "--max-chunks", str(ranks * ranks), "--max-pieces", "4000000"]
        for cmd in (["synth", "-t", name, "-c", "allgather", "-o", str(s), "--xml", str(x), "-f"],
                    ["verify", str(s)], ["verify", str(x), *lifted]):
            code, cpu, peak, last = child(smtcoll + cmd)
            shown = " ".join(a if "/" not in a else Path(a).name for a in cmd)
            print(f"| `smtcoll {shown}` | {code} | {cpu:.1f} | {peak:,.0f} | {last[:90]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
