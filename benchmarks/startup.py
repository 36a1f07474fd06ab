"""Start-up cost of the commands a pre-commit hook and a CI job run: CPU seconds (user + system) of the
whole process, median of `--runs` runs, each command in a fresh interpreter, as `/usr/bin/time -f "%U %S"`
measures it (here read from `os.wait4`).

    python benchmarks/startup.py [--runs 5] [--smtcoll .venv/bin/smtcoll]
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
    parser.add_argument("--smtcoll", default=shutil.which("smtcoll") or "smtcoll")
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "allgather2.xml"
        small.write_text(allgather2())
        commands = {
            "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
            "smtcoll --version": [a.smtcoll, "--version"],
            "smtcoll --help": [a.smtcoll, "--help"],
            "smtcoll list": [a.smtcoll, "list"],
            "smtcoll verify allgather2.xml": [a.smtcoll, "verify", str(small)],
            "smtcoll verify examples/allgather-ring4.xml": [a.smtcoll, "verify",
                                                            str(REPO / "examples" / "allgather-ring4.xml")],
            "smtcoll synth -t ring:4 -c allgather": [a.smtcoll, "synth", "-t", "ring:4", "-c", "allgather"],
        }
        # typer 0.29 coerces every option through pydantic: what that costs on its own, for the record
        commands["python -c 'import typer, typer._adapters' (the parser and its pydantic)"] = [
            sys.executable, "-c", "import typer, typer._adapters"]
        print(f"| command | CPU s (median of {a.runs}) |\n|---|---|")
        for name, args in commands.items():
            print(f"| `{name}` | {statistics.median(cpu(args) for _ in range(a.runs)):.3f} |")


if __name__ == "__main__":
    main()
