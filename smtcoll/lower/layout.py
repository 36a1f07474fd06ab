"""Where a collective's chunks live in the MSCCL buffers of each rank.

docs/msccl-format.md, "Buffers and chunk geometry" and "In place and out of place", has the runtimes' rules.

A schedule's collective is matched, up to a renaming of its addresses, against the built-in collectives
of the table (smtcoll/collectives.py), whose chunk geometry the runtimes define. Two addresses are
interchangeable when they have the same *signature*: the multiset of (precondition ranks, postcondition
ranks) of their contributions; addresses of equal signature are paired in increasing order.
A match fixes the buffer index of every (rank, address):

| kind | nchunksperloop | input of rank r | output of rank q |
|---|---|---|---|
| allgather, gather | N*C | i[j] = address r*C+j | o[r*C+j] (every q / the root) |
| alltoall | N*C | i[d*C+j] = chunk r->d, piece j | o[s*C+j] = chunk s->q, piece j |
| reducescatter | N*C | i[d*C+j] = its share of address d*C+j | o[j] = address q*C+j |
| allreduce, reduce | C | i[j] = its share of address j | o[j] (every q / the root) |
| broadcast | C | i[j] on the root | o[j] |
| scatter | N*C | i[q*C+j] on the root | o[j] = address q*C+j |

Every row of this table is one rule: a rank's input holds the distinct addresses of its precondition
chunks of the built-in in increasing order, its output those of its postcondition chunks (so a new row of
the collectives table needs no code here); nchunksperloop is N*C when the row's `per_rank_loop` says so.
Any other collective is `custom` (legacy runtime only), laid out by the same rule applied to its own
addresses, the convention `smtcoll verify --collective SPEC` uses.
"""

from __future__ import annotations

from collections import Counter

import attrs

from smtcoll import collectives, library
from smtcoll.errors import TooLarge
from smtcoll.model import Collective

# the built-ins a runtime names (any other collective is `custom`), tried unrooted first (a collective
# that reads as several, such as any 1-rank one, is the unrooted one), else in the table's order
KINDS = tuple(k.name for k in sorted(collectives.TABLE, key=lambda k: k.rooted) if k.executor or k.legacy)
SPLIT_INPUT = frozenset(k.name for k in collectives.TABLE if k.input_share)  # input holds C/N chunks
SPLIT_OUTPUT = frozenset(k.name for k in collectives.TABLE if k.output_share)  # output holds C/N chunks


@attrs.frozen
class Layout:
    """Buffer indices of a collective on every rank, before instances are interleaved."""

    kind: str  # one of KINDS or "custom"
    ranks: int
    root: int | None
    nchunks: int  # nchunksperloop
    in_pos: dict[tuple[int, int], int]  # (rank, address) -> index in i
    out_pos: dict[tuple[int, int], int]  # (rank, address) -> index in o

    @property
    def in_chunks(self) -> int:
        return self.nchunks // self.ranks if self.kind in SPLIT_INPUT else self.nchunks

    @property
    def out_chunks(self) -> int:
        return self.nchunks // self.ranks if self.kind in SPLIT_OUTPUT else self.nchunks


def _signatures(coll: Collective) -> dict[int, tuple]:
    pre: dict[int, list[int]] = {}
    post: dict[int, list[int]] = {}
    for r, c in coll.pre:
        pre.setdefault(c, []).append(r)
    for r, c in coll.post:
        post.setdefault(c, []).append(r)
    return {a: tuple(sorted((tuple(pre.get(c, ())), tuple(post.get(c, ()))) for c in cs))
            for a, cs in coll.contributions.items()}


def _match(coll: Collective, ref: Collective) -> dict[int, int] | None:
    """address of `coll` -> address of `ref`, when the two are the same collective up to that renaming."""
    if coll.ranks != ref.ranks or coll.chunks != ref.chunks or len(coll.addresses) != len(ref.addresses):
        return None
    mine, theirs = _signatures(coll), _signatures(ref)
    if Counter(mine.values()) != Counter(theirs.values()):
        return None
    groups: dict[tuple, list[int]] = {}
    for a in sorted(theirs):
        groups.setdefault(theirs[a], []).append(a)
    out: dict[int, int] = {}
    taken: Counter[tuple] = Counter()
    for a in sorted(mine):
        sig = mine[a]
        out[a] = groups[sig][taken[sig]]
        taken[sig] += 1
    return out


def _roots(coll: Collective) -> list[int]:
    """Ranks that can be the root: they hold or receive chunk 0."""
    return sorted({r for r, c in coll.pre if c == 0} | {r for r, c in coll.post if c == 0})


def recognize(coll: Collective) -> Layout:
    """The layout of `coll`: a built-in kind when it matches one, else `custom`."""
    n = coll.ranks
    for kind in KINDS:
        spec = library.COLLECTIVES[kind]
        row = collectives.BY_NAME[kind]
        for root in (_roots(coll) if row.rooted else [None]):
            try:
                per_piece = library.collective(kind, n, root, 1).chunks
            except TooLarge:
                # one piece of this kind exceeds the cells a collective may have (an Alltoall of 128 ranks
                # is 16384), so `coll`, which was built within them, is not of this kind
                continue
            if coll.chunks % per_piece:
                continue
            c = coll.chunks // per_piece
            ref = spec.instantiate(n, root, c)
            amap = _match(coll, ref)
            if amap is None:
                continue
            # the reference's buffers hold its addresses in increasing order (the table above)
            at = custom_layout(ref)
            in_pos = {(r, coll.address[ch]): at.in_pos[(r, amap[coll.address[ch]])] for r, ch in coll.pre}
            out_pos = {(r, coll.address[ch]): at.out_pos[(r, amap[coll.address[ch]])] for r, ch in coll.post}
            nchunks = n * c if row.per_rank_loop else c
            return Layout(kind, n, root, nchunks, in_pos, out_pos)
    return custom_layout(coll)


def custom_layout(coll: Collective) -> Layout:
    in_pos: dict[tuple[int, int], int] = {}
    out_pos: dict[tuple[int, int], int] = {}
    for r in range(coll.ranks):
        for pos, a in enumerate(sorted({coll.address[c] for c in coll.pre_sets[r]})):
            in_pos[(r, a)] = pos
        for pos, a in enumerate(sorted({coll.address[c] for c in coll.post_sets[r]})):
            out_pos[(r, a)] = pos
    size = max([1, *(p + 1 for p in in_pos.values()), *(p + 1 for p in out_pos.values())])
    return Layout("custom", coll.ranks, None, size, in_pos, out_pos)
