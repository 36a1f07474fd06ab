"""Regenerate `proofs/`: the certificates of the optimality claims of the synthesis benchmark set.

Usage: python benchmarks/make_proofs.py [OUT_DIR]   (default: proofs/ at the repository root)

Deterministic: the same smtcoll, z3 and cvc5 give byte-identical files. Stale certificates in OUT_DIR
are removed. Each claim says what cannot be beaten; `smtcoll proof check proofs/` re-checks them all.
A claim the solvers refute stops the script with exit code 1 (the benchmark set's optimality claim
would be false).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smtcoll import library  # noqa: E402
from smtcoll.proofs import Claim, write_certificate  # noqa: E402
from smtcoll.proofs.throughput import write_throughput_certificate  # noqa: E402

# (topology, collective, root, chunks C, max steps, max rounds, why it matters). The step budget with
# an equal round budget is SCCL's least-steps instance (one round per step).
CLAIMS: list[tuple[str, str, int | None, int, int | None, int | None, str]] = [
    # DGX-1 Allgather: least steps 2; the Pareto frontier up to C=6 is (2 steps, R/C = 3/2) and
    # (3 steps, R/C = 7/6): at 2 steps no C <= 6 beats 3/2, and no schedule at all beats 7/6.
    ("dgx1", "allgather", None, 1, 1, None, "least steps is 2"),
    ("dgx1", "allgather", None, 1, 2, 1, "2 steps need R/C >= 3/2 (C=1)"),
    ("dgx1", "allgather", None, 2, 2, 2, "2 steps need R/C >= 3/2 (C=2)"),
    ("dgx1", "allgather", None, 3, 2, 4, "2 steps need R/C >= 3/2 (C=3)"),
    ("dgx1", "allgather", None, 4, 2, 5, "2 steps need R/C >= 3/2 (C=4)"),
    ("dgx1", "allgather", None, 5, 2, 7, "2 steps need R/C >= 3/2 (C=5)"),
    ("dgx1", "allgather", None, 6, 2, 7, "SCCL's S=2 R=7 C=6 (UNSAT in 3.25 s)"),
    ("dgx1", "allgather", None, 6, 2, 8, "2 steps need R/C >= 3/2 (C=6)"),
    *[("dgx1", "allgather", None, c, None, -(-7 * c // 6) - 1, f"R/C >= 7/6 for any steps (C={c})")
      for c in range(1, 7)],
    # other DGX-1 collectives of the SCCL table
    ("dgx1", "gather", 0, 1, 1, None, "Gather root 0: least steps 2"),
    ("dgx1", "gather", 0, 6, None, 6, "Gather root 0: R/C >= 7/6 (C=6)"),
    ("dgx1", "alltoall", None, 1, 2, 2, "Alltoall: least steps 3 with one round per step"),
    ("dgx1", "alltoall", None, 3, None, 7, "Alltoall Pareto point (2, 8, 3): R/C >= 8/3 (C=3)"),
    ("dgx1", "allreduce", None, 1, 1, None, "Allreduce: least steps 2"),
    ("dgx1", "reducescatter", None, 1, 1, None, "ReduceScatter: least steps 2"),
    # star, hub-and-spoke, rings and lines: the cases where SCCL proves step counts one by one or never ends
    ("star:8", "allgather", None, 1, 6, 6, "least steps 7 (one round per step)"),
    ("star:8", "alltoall", None, 1, 6, 6, "least steps 7 (one round per step)"),
    ("hub-and-spoke:8", "allgather", None, 1, 6, 6, "least steps 7 (one round per step)"),
    ("dgx2", "allgather", None, 1, 14, 14, "DGX-2: least steps 15 (one round per step)"),
    ("fully-connected:8", "allgather", None, 4, 3, 3, "C=4: least steps 4 (one round per step)"),
    ("ring:4", "allgather", None, 1, 1, None, "least steps 2"),
    ("ring:16", "allgather", None, 1, 7, None, "least steps 8"),
    ("ring:8", "alltoall", None, 1, 7, 7, "least steps 8 (one round per step)"),
    ("line:8", "alltoall", None, 1, 15, 15, "least steps 16 (one round per step)"),
    ("line:4", "allreduce", None, 1, 2, None, "least steps 3"),
    ("star:4", "allreduce", None, 1, 1, None, "least steps 2"),
    ("ring:8", "allreduce", None, 1, 3, None, "least steps >= 4"),
    ("ring:8", "allreduce", None, 1, 4, None, "least steps 5 (SMT: no bound reaches it)"),
    # step-optimal Allgather on the tori of the TACOS table (one chunk per directed link per step)
    ("torus2d:3x3", "allgather", None, 1, 1, None, "least steps 2"),
    ("torus2d:4x4", "allgather", None, 1, 3, None, "least steps 4"),
    ("torus2d:5x5", "allgather", None, 1, 5, 5, "least steps 6"),
    ("torus2d:4x8", "allgather", None, 1, 7, 7, "least steps 8"),
    ("torus2d:6x6", "allgather", None, 1, 8, 8, "least steps 9"),
    ("torus2d:8x8", "allgather", None, 1, 15, 15, "16 or 17 (open): at least 16"),
    ("mesh2d:4x4", "allgather", None, 1, 7, 7, "least steps 8"),
]

# Throughput certificates (`smtcoll bounds --certificate`): T(B) >= us_per_byte * B on the built-in machines,
# the four collectives of the NCCL comparison; across nodes, the targets of issue 23 and the issue 24 Alltoall.
THROUGHPUT: list[tuple[str, int, str]] = [
    *[(m, 1, c) for m in ("dgx1", "ndv2", "dgx2", "a100", "mi250", "amd8")
      for c in ("allgather", "reducescatter", "allreduce", "alltoall")],
    ("ndv2", 2, "allgather"), ("ndv2", 2, "reducescatter"), ("ndv2", 2, "allreduce"), ("ndv2", 4, "allreduce"),
    ("a100", 2, "allgather"), ("a100", 2, "alltoall"),
]


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for old in list(out.glob("*.json")) + list(out.glob("*.smt2")):
        old.unlink()
    for topology, collective, root, chunks, steps, rounds, why in CLAIMS:
        topo = library.topology(topology)
        coll = library.collective(collective, topo.ranks, root, chunks)
        start = time.perf_counter()
        path = write_certificate(Claim(steps, rounds), topo, coll, out)
        method = "smt" if path.with_suffix(".smt2").exists() else "bound"
        print(f"{path.name:<48} {method:<6} {time.perf_counter() - start:6.2f} s  {why}", flush=True)
    for machine, nodes, collective in THROUGHPUT:
        topo = library.topology(machine, nodes)
        start = time.perf_counter()
        path = write_throughput_certificate(topo, library.collective(collective, topo.ranks, None, 1), out)
        print(f"{path.name:<48} {'time':<6} {time.perf_counter() - start:6.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "proofs"))
