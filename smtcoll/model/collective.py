"""Collective: chunks with pre- and postcondition relations and an address per chunk."""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
from collections.abc import Iterable

import attrs

from smtcoll.errors import ModelError

Relation = tuple[tuple[int, int], ...]  # sorted (rank, chunk) pairs
_CHUNK = operator.itemgetter(1)


def _ints(items: Iterable[int]) -> tuple[int, ...]:
    return tuple(items)


def _relation(pairs: Iterable[tuple[int, int]]) -> Relation:
    # sort first, then drop repeats in order: sorting a set of a million pairs is slow (scattered in
    # memory), while pairs that arrive sorted, as the built-ins' do, sort in one pass
    return tuple(dict.fromkeys(sorted((int(r), int(c)) for r, c in pairs)))


@attrs.frozen
class Collective:
    """`pre` and `post` hold (rank, chunk) pairs. Chunks sharing an address are contributions to one
    reduced value (the collective is combining); a rank in `post` of chunk c must end with the value of
    address(c) that includes c's contribution exactly once, and no contribution it does not require.

    `chunk_factor` is the C of an instance: every chunk of the base collective was split in C.
    """

    name: str
    ranks: int
    chunks: int
    pre: Relation = attrs.field(converter=_relation)
    post: Relation = attrs.field(converter=_relation)
    address: tuple[int, ...] = attrs.field(converter=_ints)
    root: int | None = None
    chunk_factor: int = 1

    def __attrs_post_init__(self) -> None:
        for field, low in (("ranks", 1), ("chunks", 1), ("chunk_factor", 1)):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ModelError(field, f"must be an integer >= {low}, got {value!r}")
        if self.root is not None and not (0 <= self.root < self.ranks):
            raise ModelError("root", f"= {self.root}: rank out of range (collective has {self.ranks} ranks)")
        for field in ("pre", "post"):
            relation = getattr(self, field)
            chunks = set(map(_CHUNK, relation))  # map and itemgetter: C loops, for a million pairs
            if not relation or (relation[0][0] >= 0 and relation[-1][0] < self.ranks  # sorted by rank
                                and min(chunks) >= 0 and max(chunks) < self.chunks):
                continue  # all in range; otherwise the loop below names the first pair out of range
            for r, c in relation:
                if not 0 <= r < self.ranks:
                    raise ModelError(field, f"rank {r} out of range ({self.ranks} ranks)")
                if not 0 <= c < self.chunks:
                    raise ModelError(field, f"chunk {c} out of range ({self.chunks} chunks)")
        if len(self.address) != self.chunks:
            raise ModelError("address", f"has {len(self.address)} entries for {self.chunks} chunks")
        for c, a in enumerate(self.address):
            if not isinstance(a, int) or a < 0:
                raise ModelError(f"address[{c}]", f"must be an integer >= 0, got {a!r}")
            # an address is a slot of the output buffer: with `chunks` chunks there are at most that many
            # values, and the bounds and the lowering index arrays by it (chunk x 10^18 overflowed them)
            if a >= self.chunks:
                raise ModelError(f"address[{c}]", f"= {a}: an address is a buffer slot, 0..{self.chunks - 1} "
                                                  f"for {self.chunks} chunks")
        held = set(map(_CHUNK, self.pre))
        if set(map(_CHUNK, self.post)) <= held:
            return
        for r, c in self.post:
            if c not in held:
                raise ModelError("post", f"rank {r} must end with chunk {c}, which no rank holds at the start")

    # --- views -------------------------------------------------------------------------------
    @functools.cached_property
    def is_combining(self) -> bool:
        return len(set(self.address)) < self.chunks

    @functools.cached_property
    def addresses(self) -> tuple[int, ...]:
        """The distinct addresses, sorted."""
        return tuple(sorted(set(self.address)))

    @functools.cached_property
    def contributions(self) -> dict[int, tuple[int, ...]]:
        """address -> the chunks (contributions) that share it."""
        out: dict[int, list[int]] = {}
        for c, a in enumerate(self.address):
            out.setdefault(a, []).append(c)
        return {a: tuple(cs) for a, cs in sorted(out.items())}

    @functools.cached_property
    def pre_sets(self) -> tuple[frozenset[int], ...]:
        """pre_sets[rank] = chunks the rank holds at the start."""
        sets: list[set[int]] = [set() for _ in range(self.ranks)]
        for r, c in self.pre:
            sets[r].add(c)
        return tuple(frozenset(s) for s in sets)

    @functools.cached_property
    def post_sets(self) -> tuple[frozenset[int], ...]:
        # `post` is sorted by rank: each rank's chunks are one slice of it
        bounds = [bisect.bisect_left(self.post, (r,)) for r in range(self.ranks + 1)]
        return tuple(frozenset(map(_CHUNK, self.post[lo:hi])) for lo, hi in itertools.pairwise(bounds))

    def with_chunks(self, factor: int) -> Collective:
        """Split every chunk in `factor` pieces: chunk c becomes c*factor + j, address a*factor + j."""
        if not isinstance(factor, int) or factor < 1:
            raise ModelError("chunks", f"chunk multiplier must be an integer >= 1, got {factor!r}")
        if factor == 1:
            return self
        f = factor
        return Collective(
            name=self.name,
            ranks=self.ranks,
            chunks=self.chunks * f,
            pre=[(r, c * f + j) for r, c in self.pre for j in range(f)],
            post=[(r, c * f + j) for r, c in self.post for j in range(f)],
            address=[a * f + j for a in self.address for j in range(f)],
            root=self.root,
            chunk_factor=self.chunk_factor * f,
        )
