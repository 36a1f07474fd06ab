"""smtcoll beside TACOS (github:astra-sim/tacos) on the topologies TACOS has, Allgather.

    python benchmarks/tacos.py [--tacos DIR|GITDIR] [--large] [--repeat N] [--markdown OUT.md]

TACOS is built from its public source: `--tacos` names a checkout (or a bare git directory, exported
with `git archive`); without it the script clones https://github.com/astra-sim/tacos into a temporary
directory. Its sources are compiled with g++ (C++17, -O3) together with a driver this script writes
(TACOS's own `main.cpp` runs one fixed instance), which builds a TACOS topology, runs its synthesizer
on AllGather with one chunk per NPU and prints the collective time. When there is no source, no
compiler, or the build fails, the script says so and exits 0 (skipped): nothing here is needed by smtcoll.

Steps: every link gets latency 1 us and a bandwidth at which a 1-byte chunk costs nothing, so TACOS's
collective time in microseconds is its number of link steps (TACOS is link-time driven: every transfer
takes one latency). smtcoll: `synth -t T -c allgather --method scale --format json`, its steps (one round
each) and the lower bound it reports. CPU = user + system of each child process (`os.wait4`), peak RSS.
TACOS seeds its random choices from `std::random_device`, so its steps can differ between runs:
`--repeat N` runs it N times and shows the range.

No TACOS code is copied into smtcoll: the driver below only calls TACOS's public API.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# (smtcoll topology, TACOS constructor): TACOS has 2D/3D tori, 2D meshes and a "Hypercube3D" that is a
# 3D mesh (2x2x2 of it is the 3-cube). A ring is Torus2D(N, 1) only if TACOS accepts a height of 1,
# which its wrap-around turns into self-links: not used.
INSTANCES = [
    ("torus2d:4x4", "Torus2D(4, 4, BW, LAT)"),
    ("torus2d:8x8", "Torus2D(8, 8, BW, LAT)"),
    ("torus2d:12x12", "Torus2D(12, 12, BW, LAT)"),
    ("torus2d:16x16", "Torus2D(16, 16, BW, LAT)"),
    ("torus3d:4x4x4", "Torus3D(4, 4, 4, BW, LAT)"),
    ("torus3d:8x8x8", "Torus3D(8, 8, 8, BW, LAT)"),
    ("mesh2d:8x8", "Mesh2D(8, 8, BW, LAT)"),
    ("mesh2d:16x16", "Mesh2D(16, 16, BW, LAT)"),
    ("hypercube:3", "Hypercube3D(2, 2, 2, BW, LAT)"),
]
LARGE = [("torus2d:32x32", "Torus2D(32, 32, BW, LAT)")]

DRIVER = r"""
#include <iostream>
#include <string>
#include <tacos/collective/all_gather.h>
#include <tacos/synthesizer/synthesizer.h>
#include <tacos/topology/hypercube_3d.h>
#include <tacos/topology/mesh_2d.h>
#include <tacos/topology/torus_2d.h>
#include <tacos/topology/torus_3d.h>

using namespace tacos;

int main() {
    const double BW = 1.0e6;  // GiB/s: a 1-byte chunk costs ~1e-15 us on a link
    const double LAT = 1.0;   // us: one link step
    const auto topology = TOPOLOGY;
    const auto collective = AllGather(topology.npusCount(), 1);
    auto synthesizer = Synthesizer();
    const auto t = synthesizer.solve(topology, collective, 1);
    std::cout.precision(17);
    std::cout << topology.npusCount() << " " << t << std::endl;
    return 0;
}
"""


def find_source(arg: str | None, work: Path) -> Path | None:
    """A directory with TACOS's `src/` and `include/`, or None (with the reason printed)."""
    if arg:
        p = Path(arg)
        if (p / "src").is_dir() and (p / "include").is_dir():
            return p
        if (p / "HEAD").is_file():  # a bare git directory (e.g. a mirror)
            out = work / "tacos-src"
            out.mkdir()
            archive = subprocess.run(["git", f"--git-dir={p}", "archive", "HEAD"], capture_output=True)
            if archive.returncode == 0:
                subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=False)
                if (out / "src").is_dir():
                    return out
        print(f"skipped: {arg} holds no TACOS source (src/ and include/)")
        return None
    out = work / "tacos-src"
    r = subprocess.run(["git", "clone", "--depth", "1", "https://github.com/astra-sim/tacos", str(out)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "git failed"
        print(f"skipped: could not clone TACOS ({why})")
        return None
    return out


def build(src: Path, topology_ctor: str, work: Path) -> Path | None:
    """The driver for one TACOS topology, compiled with TACOS's sources; None when the build fails."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        print("skipped: no C++ compiler (g++)")
        return None
    name = "".join(ch if ch.isalnum() else "_" for ch in topology_ctor.split(",")[0])
    driver = work / f"{name}.cpp"
    driver.write_text(DRIVER.replace("TOPOLOGY", topology_ctor))
    objs = lib_objects(src, work, cxx)
    if objs is None:
        return None
    exe = work / name
    r = subprocess.run([cxx, "-std=c++17", "-O3", "-DNDEBUG", f"-I{src / 'include'}", f"-I{src / 'include' / 'tacos'}",
                        str(driver), *map(str, objs), "-o", str(exe)], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"skipped: the TACOS driver did not build:\n{r.stderr[-2000:]}")
        return None
    return exe


_OBJS: dict[Path, list[Path] | None] = {}


def lib_objects(src: Path, work: Path, cxx: str) -> list[Path] | None:
    """TACOS's library sources (all but its main.cpp), compiled once."""
    if src in _OBJS:
        return _OBJS[src]
    objs = []
    for f in sorted((src / "src").rglob("*.cpp")):
        if f.name == "main.cpp":
            continue
        o = work / (f.stem + ".o")
        r = subprocess.run([cxx, "-std=c++17", "-O3", "-DNDEBUG", f"-I{src / 'include'}",
                            f"-I{src / 'include' / 'tacos'}", "-c", str(f), "-o", str(o)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"skipped: TACOS did not build ({f.name}):\n{r.stderr[-2000:]}")
            _OBJS[src] = None
            return None
        objs.append(o)
    _OBJS[src] = objs
    return objs


def measured(cmd: list[str], env: dict | None = None, timeout: float = 900) -> tuple[str, float, float, int]:
    """stdout, CPU seconds (user + system), peak MB, exit code of one child process."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO)
    t0 = time.monotonic()
    out = ""
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > timeout:
            p.kill()
            pid, status, usage = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    if p.stdout is not None:
        out = p.stdout.read()
    code = os.waitstatus_to_exitcode(status)
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def smtcoll_row(topo: str) -> tuple[int | None, int | None, float, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out, cpu, mb, code = measured([sys.executable, "-m", "smtcoll", "synth", "-t", topo, "-c", "allgather", "--method",
                                   "scale", "--format", "json"], env)
    if code != 0:
        return None, None, cpu, mb
    data = json.loads(out)
    return data["steps"], data["gap"]["steps_bound"], cpu, mb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tacos", help="a TACOS checkout or bare git directory (default: clone it)")
    ap.add_argument("--large", action="store_true", help="also torus2d:32x32 (TACOS: about a CPU minute)")
    ap.add_argument("--repeat", type=int, default=1, help="TACOS runs per instance (it is randomized)")
    ap.add_argument("--only", help="only instances whose name contains this")
    ap.add_argument("--markdown", help="also write the table here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="smtcoll-tacos-") as tmp:
        work = Path(tmp)
        src = find_source(args.tacos, work)
        if src is None:
            return 0
        rows = ["| instance | smtcoll steps | TACOS steps | lower bound | smtcoll CPU s | TACOS CPU s | smtcoll MB "
                "| TACOS MB |", "|---|---|---|---|---|---|---|---|"]
        for topo, ctor in INSTANCES + (LARGE if args.large else []):
            if args.only and args.only not in topo:
                continue
            exe = build(src, ctor, work)
            if exe is None:
                return 0
            steps, cpus, mbs = [], [], []
            for _ in range(args.repeat):
                out, cpu, mb, code = measured([str(exe)])
                if code != 0 or not out.strip():
                    steps.append(None)
                else:
                    steps.append(round(float(out.split()[1])))
                cpus.append(cpu)
                mbs.append(mb)
            ok = [s for s in steps if s is not None]
            tacos = "failed" if not ok else (f"{min(ok)}" if min(ok) == max(ok) else f"{min(ok)}-{max(ok)}")
            s_steps, bound, s_cpu, s_mb = smtcoll_row(topo)
            row = (f"| `{topo}` | {s_steps if s_steps is not None else 'failed'} | {tacos} | {bound} | {s_cpu:.1f} | "
                   f"{sum(cpus) / len(cpus):.1f} | {s_mb:.0f} | {max(mbs):.0f} |")
            rows.append(row)
            print(row, flush=True)
    if args.markdown:
        Path(args.markdown).write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
