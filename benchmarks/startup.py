"""Start-up cost of the commands a pre-commit hook and a CI job run: CPU seconds (user + system) of the
whole process, median of `--runs` runs, each command in a fresh interpreter, as `/usr/bin/time -f "%U %S"`
measures it (here read from `os.wait4`).

    python benchmarks/startup.py [--runs 5] [--smtcoll .venv/bin/smtcoll] [--smtcoll before=/path/to/smtcoll]

Several `--smtcoll` (optionally `LABEL=PATH`) give one column each; their runs alternate, so that a shared
machine's load weighs on every column alike (compare columns of one run, not of two runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers.xmlgen import allgather2  # noqa: E402  (the 2-rank allgather of the tests: a small file)


def cpu(args: list[str]) -> float:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smtcoll", action="append", metavar="[LABEL=]PATH",
                        help="the smtcoll command to time (repeatable: one column each)")
    a = parser.parse_args()
    columns = dict(s.split("=", 1) if "=" in s else (s, s)
                   for s in (a.smtcoll or [shutil.which("smtcoll") or "smtcoll"]))
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "allgather2.xml"
        small.write_text(allgather2())
        commands: dict[str, list[str] | None] = {
            "python -c pass (the interpreter alone)": None,
            "smtcoll --version": ["--version"],
            "smtcoll --help": ["--help"],
            "smtcoll list": ["list"],
            "smtcoll verify allgather2.xml": ["verify", str(small)],
            "smtcoll verify examples/allgather-ring4.xml": ["verify", str(REPO / "examples" / "allgather-ring4.xml")],
            "smtcoll synth -t ring:4 -c allgather": ["synth", "-t", "ring:4", "-c", "allgather"],
        }
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        print(f"| command | {' | '.join(f'CPU s, {c} (median of {a.runs})' for c in columns)} |")
        print(f"|---|{'---|' * len(columns)}")
        for name, args in commands.items():
            times: dict[str, list[float]] = {c: [] for c in columns}
            for _ in range(a.runs):
                for label, exe in columns.items():
                    times[label].append(cpu([sys.executable, "-c", "pass"] if args is None else [exe, *args]))
            print(f"| `{name}` | {' | '.join(f'{statistics.median(t):.3f}' for t in times.values())} |")
        # typer 0.29 converts options through pydantic: what the two cost on their own, for the record
        for name, code in (("import typer", "import typer"), ("import typer, pydantic", "import typer, pydantic"),
                           ("import numpy", "import numpy")):
            t = statistics.median(cpu([sys.executable, "-c", code]) for _ in range(a.runs))
            print(f"| `python -c '{name}'` | {t:.3f} |")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
