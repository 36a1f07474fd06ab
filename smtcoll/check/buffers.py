"""Buffers and chunk geometry of one run: real sizes, in-place aliasing and initial contents
(docs/msccl-format.md, "Buffers and chunk geometry" / "In place and out of place").

All buffers are cut into chunks of the same size, `count * sizeMultiplier / nchunksperloop`. With C =
nchunksperloop and N = ngpus, input and output hold C chunks, except that the input of allgather (and
gather) and the output of reduce-scatter (and scatter) hold C/N. In place, the buffers alias:
`i[k] = o[rank*C/N + k]` (allgather, gather), `o[k] = i[rank*C/N + k]` (reduce-scatter, scatter), else
`i[k] = o[k]`. A location is an integer naming (rank, canonical buffer, canonical index).
"""

from __future__ import annotations

import attrs

from smtcoll import collectives

# `coll` values whose input (output) holds one rank's share, in either runtime's spelling (the table's rows)
SPLIT_INPUT = frozenset(s for k in collectives.TABLE if k.input_share for s in k.spellings)
SPLIT_OUTPUT = frozenset(s for k in collectives.TABLE if k.output_share for s in k.spellings)
BUF_ID = {"i": 0, "o": 1, "s": 2}
BUF_NAME = "ios"
_SHIFT = 24
_BIAS = 1 << 22


@attrs.frozen
class Geometry:
    coll: str
    ranks: int
    chunks: int  # nchunksperloop
    in_place: bool
    scratch: dict[int, int]  # rank -> s_chunks (declared; the runtime sizes it from them)

    @property
    def mode(self) -> str:
        return "in-place" if self.in_place else "out-of-place"

    @property
    def split(self) -> int:
        """C/N, the chunks of one rank's share (0 when C is not a multiple of N)."""
        return self.chunks // self.ranks if self.chunks % self.ranks == 0 else 0

    @property
    def in_chunks(self) -> int:
        return self.split if self.coll in SPLIT_INPUT else self.chunks

    @property
    def out_chunks(self) -> int:
        return self.split if self.coll in SPLIT_OUTPUT else self.chunks

    def size(self, rank: int, buf: str) -> int:
        if buf == "i":
            return self.in_chunks
        if buf == "o":
            return self.out_chunks
        return self.scratch.get(rank, 0)

    def canonical(self, rank: int, buf: str, index: int) -> tuple[int, int]:
        """(buffer id, index) after in-place aliasing."""
        if self.in_place:
            if buf == "i":
                if self.coll in SPLIT_INPUT:
                    return 1, rank * self.split + index
                if self.coll not in SPLIT_OUTPUT:
                    return 1, index
            elif buf == "o" and self.coll in SPLIT_OUTPUT:
                return 0, rank * self.split + index
        return BUF_ID[buf], index

    def loc(self, rank: int, buf: str, index: int) -> int:
        b, k = self.canonical(rank, buf, index)
        return ((rank * 3 + b) << _SHIFT) + k + _BIAS

    def name(self, loc: int) -> tuple[int, str]:
        """(rank, 'o[3]') of a location."""
        hi, k = loc >> _SHIFT, (loc & ((1 << _SHIFT) - 1)) - _BIAS
        return hi // 3, f"{BUF_NAME[hi % 3]}[{k}]"

    def contribution(self, rank: int, k: int) -> int:
        """Id of input chunk k of `rank`."""
        return rank * self.in_chunks + k

    def initial(self) -> dict[int, tuple[int, int]]:
        """loc -> value (mask of contributions, mask of contributions counted twice) at the start."""
        return {self.loc(r, "i", k): (1 << self.contribution(r, k), 0)
                for r in range(self.ranks) for k in range(self.in_chunks)}
