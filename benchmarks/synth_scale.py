"""The large-instance engine on the targets of the scale issue: per instance the steps, rounds, chunks,
the lower bound, the gap, CPU seconds and peak memory of the whole `smtcoll synth --method scale`
command, and the CPU seconds of `smtcoll bounds --no-lp`.

Each command runs in a child process; CPU (user + system) and peak RSS come from os.wait4 on it. One run
per instance (the large ones take tens of seconds on a shared machine; CPU seconds vary little).

    python benchmarks/synth_scale.py [--only SUBSTRING] [--skip-bounds] [--unseen] [--markdown OUT.md]
    python benchmarks/synth_scale.py --recheck [--only SUBSTRING] [--markdown OUT.md]
    python benchmarks/synth_scale.py --nodes-sweep [--only SUBSTRING] [--markdown OUT.md]
    python benchmarks/synth_scale.py --allreduce [--unseen | --survey | --machines] [--only SUBSTRING]
        [--markdown OUT.md]

--recheck runs each instance of RECHECK twice, with `--method scale` and with no --method (the default a
user gets), and `smtcoll bounds` (its default, LP included): steps, the bound synth reports, the
strongest bound `bounds` proves, exit code, CPU s and peak MB of each command.

--nodes-sweep runs NODES (Allgather on machines of nodes at node counts the methods were not tuned on,
issue 24, session 9) with no --method, the default a user gets, against the bound synth reports.

--allreduce surveys one-chunk Allreduce with no --method (what a user gets) on ALLREDUCE: steps, the
distance bound and the strongest bound `smtcoll bounds` proves, their ratio (issue 24's target: 1.5x),
CPU s and peak MB of the synth command; rows over 1.5x, 10 s CPU or 1 GB are marked. With --unseen, on
ALLREDUCE_UNSEEN (machines and node counts not tuned on); with --survey, on ALLREDUCE_SURVEY; with --machines,
on ALLREDUCE_MACHINES (every node count of a100, dgx2, ndv2 and mi250 up to 12, 16 and 8).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (arguments, the target: "bound", "1%", "5%", "1.5x")
TARGETS = [
    ("-t torus2d:12x12 -c allgather", "bound"), ("-t torus2d:16x16 -c allgather", "bound"),
    ("-t torus3d:8x8x8 -c allgather", "bound"), ("-t hypercube:8 -c allgather", "bound"),
    ("-t ndv2 --nodes 4 -c allgather", "bound"), ("-t a100 --nodes 2 -c allgather", "bound"),
    ("-t torus2d:32x32 -c allgather", "1%"), ("-t hypercube:10 -c allgather", "1%"),
    ("-t mesh2d:16x16 -c allgather", "bound"),
    ("-t torus2d:4x4 -c alltoall", "5%"), ("-t hypercube:4 -c alltoall", "5%"), ("-t ring:16 -c alltoall", "5%"),
    ("-t mi250 -c alltoall", "5%"), ("-t a100 --nodes 2 -c alltoall", "5%"), ("-t torus2d:8x8 -c alltoall", "5%"),
    ("-t hypercube:6 -c alltoall", "5%"), ("-t dgx1 -c alltoall --chunks 8", "5%"),
    ("-t hypercube:6 -c allreduce", "1.5x"), ("-t torus2d:6x6 -c allreduce", "1.5x"),
    ("-t torus2d:16x16 -c allreduce", "1.5x"), ("-t ring:64 -c allreduce", "1.5x"),
    ("-t a100 --nodes 2 -c allreduce", "1.5x"), ("-t torus2d:12x12 -c allreduce", "1.5x"),
    ("-t hypercube:8 -c reducescatter", "bound"), ("-t torus2d:8x8 -c reducescatter", "bound"),
    ("-t dgx2 --nodes 16 -c allgather", "bound"), ("-t mi250 --nodes 4 -c allgather", "bound"),
]
# --unseen: node counts and machines the methods were not tuned on (checked again, issue 24)
UNSEEN = [
    ("-t mi250 --nodes 3 -c allgather", "bound"), ("-t dgx2 --nodes 3 -c allgather", "bound"),
    ("-t a100 --nodes 3 -c allgather", "bound"), ("-t mi250 --nodes 8 -c allgather", "bound"),
    ("-t a100 --nodes 3 -c allreduce", "1.5x"),
]

# --nodes-sweep: Allgather on machines of nodes at any node count (issue 24, session 9), no --method
NODES = [(f"-t {m} --nodes {n} -c allgather", "bound") for m, ns in (
    ("a100", (3, 4, 5, 6, 7, 8, 9, 12, 16)), ("ndv2", (3, 5, 6, 7, 9, 12)), ("mi250", (5, 6)),
    ("dgx2", (4, 5)), ("benchmarks/topologies/switch8-4nic.toml", (3, 5)),
    ("benchmarks/topologies/chordring12-nic.toml", (2, 3, 4)), ("benchmarks/topologies/ring8-nic.toml", (3, 5)))
    for n in ns]

# --recheck: issue 24's "checked again on machines and sizes not seen" (session 5)
RECHECK = [f"-t {m} --nodes {n} -c {c}" for m, ns in (("ndv2", (3, 8)), ("dgx2", (3, 8)), ("mi250", (2, 3)),
                                                      ("a100", (3, 4)))
           for n in ns for c in ("allgather", "alltoall")] + [
    "-t torus2d:12x20 -c allgather", "-t torus3d:4x4x8 -c allgather", "-t hypercube:9 -c allgather"] + [
    # one-chunk Allreduce, within 1.5x of the bound (issue 24, session 5's item 3)
    f"-t {t} -c allreduce" for t in ("torus2d:6x6", "torus2d:16x16", "ring:64", "a100 --nodes 2", "a100 --nodes 3",
                                     "dgx2 --nodes 2", "ndv2 --nodes 3", "mesh2d:8x8", "hypercube:6")]

# --allreduce: one-chunk Allreduce, default method (issue 24, session 7)
ALLREDUCE = [f"-t {m}" + (f" --nodes {n}" if n > 1 else "") for m in ("a100", "dgx2", "ndv2", "mi250")
             for n in (1, 2, 3, 4)] + ["-t ndv2 --nodes 8", "-t dgx1"] + [
    f"-t {t}" for t in ("torus2d:4x4", "torus2d:6x6", "torus2d:8x8", "torus2d:16x16", "torus3d:4x4x4", "mesh2d:8x8",
                        "ring:8", "ring:16", "ring:64", "hypercube:4", "hypercube:6")]
# --allreduce --unseen: machines and node counts the methods were not tuned on
ALLREDUCE_UNSEEN = [f"-t {m} --nodes {n}" for m, ns in (("a100", (5, 6, 8)), ("dgx2", (5, 6)), ("ndv2", (5, 6, 16)),
                                                         ("mi250", (5,))) for n in ns] + [
    "-t torus2d:5x7", "-t ring:12", "-t torus3d:4x4x8", "-t hypercube:8"]
# --allreduce --survey: odd and mixed-parity tori, odd rings, meshes, hypercubes, 1000+ ranks and machines of
# 3-32 nodes (issue 24, session 8: the held-out check's kinds of instance)
ALLREDUCE_SURVEY = [f"-t {t}" for t in (
    "torus2d:3x3", "torus2d:3x5", "torus2d:3x9", "torus2d:5x5", "torus2d:5x7", "torus2d:7x7", "torus2d:6x9",
    "torus2d:4x7", "torus2d:9x11", "torus3d:3x3x3", "torus3d:3x4x5", "torus3d:5x5x5", "torus3d:3x3x7",
    "ring:5", "ring:7", "ring:9", "ring:11", "ring:15", "ring:33", "ring:65", "ring:100",
    "mesh2d:5x7", "mesh2d:3x9", "hypercube:5", "hypercube:7",
    "ring:1024", "ring:1001", "torus2d:32x32", "torus2d:31x33", "torus3d:10x10x10",
    # session 9: the rest of the odd tori with a side of 4k + 3 (all above 1.5x in session 8)
    "torus2d:5x11", "torus2d:7x9", "torus2d:7x11", "torus2d:11x11", "torus3d:5x3x7", "torus3d:5x5x7",
    "torus3d:7x7x7")] + [
    f"-t {m} --nodes {n}" for m, ns in (("mi250", (3, 4, 5)), ("ndv2", (16, 32)), ("dgx2", (3, 4, 5, 6, 7, 8)),
                                        ("a100", (5, 6, 7, 8))) for n in ns]
# --allreduce --machines: every node count of the machines (issue 24, session 9: the held-out check re-runs
# other node counts)
ALLREDUCE_MACHINES = [f"-t {m} --nodes {n}" for m, ns in (("a100", range(2, 13)), ("dgx2", range(2, 13)),
                                                          ("ndv2", (*range(2, 13), 16)), ("mi250", range(2, 9)))
                      for n in ns]


def child(cmd: list[str], root: Path = ROOT) -> tuple[str, int, float, float]:
    """(stdout, exit code, CPU s, peak MB) of `cmd` run in `root` with that checkout's smtcoll (os.wait4)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.chdir(root)
        os.environ["PYTHONPATH"] = str(root)
        os.dup2(w, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(r)
        os.execvp(cmd[0], cmd)
    os.close(w)
    chunks = []
    with os.fdopen(r) as f:
        chunks.append(f.read())
    _, status, usage = os.wait4(pid, 0)
    return "".join(chunks), os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def within(target: str, value: int, bound: int) -> bool:
    limit = {"bound": bound, "1%": bound * 1.01, "5%": bound * 1.05, "1.5x": bound * 1.5}[target]
    return value <= limit


def strongest(out: str) -> int | None:
    """The strongest bound on one-round steps in `smtcoll bounds --format json`: max(steps, rounds)."""
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        return None
    vals = [d[k]["value"] for k in ("steps", "rounds") if isinstance(d.get(k), dict) and d[k].get("value") is not None]
    return max(vals) if vals else None


def recheck(only: str, markdown: Path | None) -> None:
    header = ("| instance | method | exit | steps | rounds | bound (synth) | strongest (`bounds`) | gap | CPU s "
              "| peak MB |\n|---|---|---|---|---|---|---|---|---|---|")
    print(header)
    rows = []
    for inst in RECHECK:
        if only not in inst:
            continue
        bout, bcode, bcpu, bmb = child([sys.executable, "-m", "smtcoll", "bounds", *shlex.split(inst),
                                        "--format", "json"])
        best = strongest(bout)
        for method in ("scale", "default"):
            extra = ["--method", "scale"] if method == "scale" else []
            out, code, cpu, mb = child([sys.executable, "-m", "smtcoll", "synth", *shlex.split(inst), *extra,
                                        "--format", "json"])
            try:
                d = json.loads(out)
                g = d["gap"]
                on_rounds = "alltoall" in inst
                value, bound = (d["rounds"], g["rounds_bound"]) if on_rounds else (d["steps"], g["steps_bound"])
                gap = f"{value - bound} ({100 * (value - bound) / bound:.1f}%)" if bound else "-"
                row = (f"| `{inst}` | {method} | {code} | {d['steps']} | {d['rounds']} | {bound} | {best} | {gap} "
                       f"| {cpu:.1f} | {mb:.0f} |")
            except (json.JSONDecodeError, KeyError, TypeError):
                row = f"| `{inst}` | {method} | {code} | - | - | - | {best} | - | {cpu:.1f} | {mb:.0f} |"
            print(row, flush=True)
            rows.append(row)
        row = f"| `{inst}` | (`bounds`) | {bcode} | - | - | - | {best} | - | {bcpu:.1f} | {bmb:.0f} |"
        print(row, flush=True)
        rows.append(row)
    if markdown:
        markdown.write_text("\n".join([header, *rows]) + "\n")


def allreduce(only: str, markdown: Path | None, unseen: bool, survey: bool = False,
              machines: bool = False) -> None:
    header = ("| instance | exit | steps | distance bound | strongest bound (`bounds`) | ratio | method | CPU s "
              "| peak MB | over |\n|---|---|---|---|---|---|---|---|---|---|")
    print(header)
    rows = []
    insts = (ALLREDUCE_MACHINES if machines else ALLREDUCE_SURVEY if survey else ALLREDUCE_UNSEEN if unseen
             else ALLREDUCE)
    for inst in insts:
        if only not in inst:
            continue
        args = [*shlex.split(inst), "-c", "allreduce"]
        # `bounds` stops at 256 ranks unless told (--max-ranks): the survey's 1000+ rank rows lift it
        bout, _, _, _ = child([sys.executable, "-m", "smtcoll", "bounds", *args, "--max-ranks", "4096", "--format",
                               "json"])
        best = strongest(bout)
        try:
            dist = json.loads(bout)["steps"]["value"]
        except (json.JSONDecodeError, KeyError, TypeError):
            dist = None
        out, code, cpu, mb = child([sys.executable, "-m", "smtcoll", "synth", *args, "--format", "json"])
        try:
            d = json.loads(out)
            steps, method = d["steps"], d["method"]
        except (json.JSONDecodeError, KeyError):
            steps, method = None, "-"
        ratio = steps / best if steps and best else None
        over = [w for w, bad in (("1.5x", ratio is None or ratio > 1.5), ("10 s", cpu > 10), ("1 GB", mb > 1024))
                if bad]
        row = (f"| `{inst} -c allreduce` | {code} | {steps} | {dist} | {best} | "
               f"{'-' if ratio is None else f'{ratio:.2f}'} | {method} | {cpu:.1f} | {mb:.0f} "
               f"| {', '.join(over) or '-'} |")
        print(row, flush=True)
        rows.append(row)
    if markdown:
        markdown.write_text("\n".join([header, *rows]) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-bounds", action="store_true")
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--unseen", action="store_true", help="the instances of UNSEEN instead of the targets")
    ap.add_argument("--recheck", action="store_true", help="RECHECK, with --method scale and the default")
    ap.add_argument("--nodes-sweep", action="store_true",
                    help="NODES (Allgather on machines of nodes at any node count), no --method")
    ap.add_argument("--allreduce", action="store_true", help="survey one-chunk Allreduce (ALLREDUCE), no --method")
    ap.add_argument("--survey", action="store_true",
                    help="with --allreduce: ALLREDUCE_SURVEY (odd tori, rings, 1000+ ranks, machines of 3-32 nodes)")
    ap.add_argument("--machines", action="store_true",
                    help="with --allreduce: ALLREDUCE_MACHINES (a100, dgx2 x 2-12, ndv2 x 2-12 and 16, mi250 x 2-8)")
    args = ap.parse_args()
    if args.allreduce:
        allreduce(args.only, args.markdown, args.unseen, args.survey, args.machines)
        return
    if args.recheck:
        recheck(args.only, args.markdown)
        return
    rows = []
    header = "| instance | steps | rounds | C | bound (steps / rounds) | gap | target | met | CPU s | peak MB | bounds CPU s |"
    print(header)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rowset = NODES if args.nodes_sweep else UNSEEN if args.unseen else TARGETS
    method = [] if args.nodes_sweep else ["--method", "scale"]
    for inst, target in rowset:
        if args.only not in inst:
            continue
        out, code, cpu, mb = child([sys.executable, "-m", "smtcoll", "synth", *shlex.split(inst), *method,
                                    "--format", "json"])
        bcpu = None
        if not args.skip_bounds:
            _, _, bcpu, _ = child([sys.executable, "-m", "smtcoll", "bounds", *shlex.split(inst), "--no-lp",
                                   "--format", "json"])
        try:
            d = json.loads(out)
        except json.JSONDecodeError:
            row = f"| `{inst}` | - | - | - | - | - | {target} | exit {code} | {cpu:.1f} | {mb:.0f} | - |"
        else:
            g = d["gap"]
            # Allgather/ReduceScatter/Allreduce targets are on steps (one round per step); Alltoall on rounds
            on_rounds = "alltoall" in inst
            value, bound = (d["rounds"], g["rounds_bound"]) if on_rounds else (d["steps"], g["steps_bound"])
            met = "yes" if within(target, value, bound) else "no"
            gap = f"{value - bound} ({100 * (value - bound) / bound:.1f}%)" if bound else "-"
            row = (f"| `{inst}` | {d['steps']} | {d['rounds']} | {d['chunks']} | {g['steps_bound']} / {g['rounds_bound']} "
                   f"| {gap} | {target} ({'rounds' if on_rounds else 'steps'}) | {met} | {cpu:.1f} | {mb:.0f} | "
                   f"{'-' if bcpu is None else f'{bcpu:.1f}'} |")
        print(row, flush=True)
        rows.append(row)
    if args.markdown:
        args.markdown.write_text("\n".join([header, "|---|---|---|---|---|---|---|---|---|---|---|", *rows]) + "\n")


if __name__ == "__main__":
    main()
