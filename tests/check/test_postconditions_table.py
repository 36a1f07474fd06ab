"""The checker's expectation for a built-in `coll` comes from the table of collectives (one rule for all);
here it is compared with the runtimes' formulas written out per collective (check/postconditions.py's
docstring, docs/msccl-format.md "Buffers and chunk geometry"), for every spelling, size, chunk count,
mode and root."""

from __future__ import annotations

import pytest

from smtcoll.check import postconditions
from smtcoll.check.buffers import Geometry


def formulas(geo: Geometry, root: int | None) -> list[tuple[int, int, int]]:
    coll, N, c, C = geo.coll, geo.ranks, geo.split, geo.chunks

    def bit(r: int | None, k: int) -> int:
        assert r is not None
        return 1 << geo.contribution(r, k)

    if coll == "allgather":
        return [(q, r * c + k, bit(r, k)) for q in range(N) for r in range(N) for k in range(c)]
    if coll == "allreduce":
        sums = [sum(bit(r, k) for r in range(N)) for k in range(C)]
        return [(q, k, sums[k]) for q in range(N) for k in range(C)]
    if coll in ("reduce_scatter", "reducescatter"):
        return [(q, k, sum(bit(r, q * c + k) for r in range(N))) for q in range(N) for k in range(c)]
    if coll == "alltoall":
        return [(q, j * c + k, bit(j, q * c + k)) for q in range(N) for j in range(N) for k in range(c)]
    if coll == "broadcast":
        return [(q, k, bit(root, k)) for q in range(N) for k in range(C)]
    if coll == "reduce":
        assert root is not None
        return [(root, k, sum(bit(r, k) for r in range(N))) for k in range(C)]
    if coll == "gather":
        assert root is not None
        return [(root, r * c + k, bit(r, k)) for r in range(N) for k in range(c)]
    assert coll == "scatter"
    return [(q, k, bit(root, q * c + k)) for q in range(N) for k in range(c)]


@pytest.mark.parametrize("coll", sorted(postconditions.BUILTIN))
def test_the_table_gives_the_runtimes_formulas(coll: str) -> None:
    for ranks in range(1, 6):
        for chunks in range(1, 3 * ranks + 1):
            for in_place in (False, True):
                for root in range(ranks) if coll in postconditions.ROOTED else [None]:
                    geo = Geometry(coll, ranks, chunks, in_place, {})
                    got = postconditions.builtin(geo, root)
                    assert got.targets == formulas(geo, root), (coll, ranks, chunks, in_place, root)
                    assert got.initial == geo.initial()
