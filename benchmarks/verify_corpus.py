"""Time `smtcoll verify` as users run it: the whole shared corpus, and its largest file.

Each measurement runs the command as a child process (`python -m smtcoll verify ...`) and reads the child's
resource usage from `os.wait4` (CPU seconds of the process and of its worker processes, peak RSS);
the median of `--runs` runs is reported.

    python benchmarks/verify_corpus.py [--runs 5] [--corpus ../shared/corpus/msccl-xml]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "msccl-xml"
LARGEST = "public/dailiuyao_msccl_tools_lyd/allreduce_allpairs_v2_Simple_gpu64_ins1.xml"


def measure(args: list[str]) -> tuple[float, float, float, int]:
    """(wall s, cpu s, peak RSS MiB, exit code) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def bench(name: str, args: list[str], runs: int) -> None:
    rows = [measure(args) for _ in range(runs)]
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[1] for r in rows)
    rss = max(r[2] for r in rows)
    print(f"{name}: median wall {wall:.2f} s, median cpu {cpu:.2f} s, peak RSS {rss:.0f} MiB, "
          f"exit code {rows[0][3]}  ({runs} runs: {' '.join(f'{r[0]:.2f}' for r in rows)})")
    print(f"  command: {' '.join(args)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    opts = parser.parse_args()
    if not opts.corpus.is_dir():
        sys.exit(f"corpus not found: {opts.corpus}")
    cmd = [sys.executable, "-m", "smtcoll", "verify"]
    files = sorted(str(p) for p in opts.corpus.rglob("*.xml"))
    print(f"{len(files)} files, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    bench("whole corpus", cmd + [str(opts.corpus)], opts.runs)
    bench("whole corpus, one process", cmd + ["--jobs", "1", str(opts.corpus)], opts.runs)
    bench("largest file", cmd + [str(opts.corpus / LARGEST)], opts.runs)
    bench("startup (list)", [sys.executable, "-m", "smtcoll", "list"], opts.runs)


if __name__ == "__main__":
    main()
