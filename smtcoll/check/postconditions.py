"""What the output buffers must hold at the end, per collective (docs/msccl-format.md, "Buffers and chunk
geometry"), with exact multiplicities.

A value is the set of input chunks (contributions) summed into it plus the set of those counted more
than once; the postcondition of every output chunk is an exact set with nothing counted twice. With
C = nchunksperloop, N = ngpus and c = C/N:

- allgather: `o[r*c+k]` on every rank = input chunk k of rank r;
- allreduce: `o[k]` on every rank = the sum over ranks of input chunk k;
- reduce-scatter: `o[k]` on rank q = the sum over ranks of input chunk `q*c+k`;
- alltoall: `o[j*c+k]` on rank q = input chunk `q*c+k` of rank j;
- broadcast: `o[k]` on every rank = input chunk k of the root; reduce: `o[k]` on the root = the sum;
- gather: `o[r*c+k]` on the root = input chunk k of rank r; scatter: `o[k]` on rank q = chunk `q*c+k` of the root.

A `Collective` (from `--collective`) is mapped onto the buffers rank by rank: the distinct addresses of a
rank's precondition chunks, in increasing order, are its input chunks 0, 1, ...; the distinct addresses of
its postcondition chunks, in increasing order, are its output chunks 0, 1, ...
"""

from __future__ import annotations

import sys

import attrs

from smtcoll import collectives, library
from smtcoll.check.buffers import Geometry
from smtcoll.limits import cell_limit
from smtcoll.model import Collective

Value = tuple[int, int] | None
BUILTIN = frozenset(s for k in collectives.TABLE for s in k.spellings)  # `coll` values with a postcondition
ROOTED = frozenset(s for k in collectives.TABLE if k.rooted for s in k.spellings)


@attrs.frozen
class Expectation:
    """Initial memory, the required final value of output chunks [(rank, index, contributions)], and how
    to name a contribution in messages."""

    initial: dict[int, tuple[int, int]]
    targets: list[tuple[int, int, int]]
    names: dict[int, str]
    description: str


def _builtin_names(geo: Geometry) -> dict[int, str]:
    return {geo.contribution(r, k): f"i[{k}] of rank {r}" for r in range(geo.ranks) for k in range(geo.in_chunks)}


def builtin(geo: Geometry, root: int | None) -> Expectation:
    """The expectation of a built-in `coll`, from its row of the table: the collective instantiated with the
    program's chunk factor, each rank's input and output holding its distinct addresses in increasing order
    (the lowering's layout, lower/layout.py), so the formulas above are one rule and a new row needs no code."""
    kind = collectives.by_spelling(geo.coll)
    if kind is None:
        raise ValueError(f"coll={geo.coll!r} is not a built-in collective")  # check.program tests BUILTIN first
    factor = geo.split if kind.per_rank_loop else geo.chunks
    t: list[tuple[int, int, int]] = []
    if factor:  # else no equal per-rank shares: check.program reports it, nothing to expect
        with cell_limit(sys.maxsize):  # the program's own size limits bound this one
            ref = library.COLLECTIVES[kind.name].instantiate(geo.ranks, root if kind.rooted else None, factor)
        in_pos = {(r, a): pos for r in range(geo.ranks)
                  for pos, a in enumerate(sorted({ref.address[c] for c in ref.pre_sets[r]}))}
        holders: dict[int, list[int]] = {}
        for r, c in ref.pre:
            holders.setdefault(c, []).append(r)
        contributions = ref.contributions
        for q in range(geo.ranks):
            for pos, a in enumerate(sorted({ref.address[c] for c in ref.post_sets[q]})):
                t.append((q, pos, sum(1 << geo.contribution(r, in_pos[(r, a)])
                                      for c in contributions[a] for r in holders.get(c, ()))))
    desc = f"{geo.coll}" + (f" with root {root}" if kind.rooted else "")
    return Expectation(geo.initial(), t, _builtin_names(geo), desc)


def from_collective(geo: Geometry, coll: Collective) -> Expectation:
    initial: dict[int, tuple[int, int]] = {}
    targets: list[tuple[int, int, int]] = []
    for r in range(coll.ranks):
        pre = sorted(coll.pre_sets[r])
        addrs = sorted({coll.address[ch] for ch in pre})
        for pos, a in enumerate(addrs):
            mask = sum(1 << ch for ch in pre if coll.address[ch] == a)
            initial[geo.loc(r, "i", pos)] = (mask, 0)
        post = sorted(coll.post_sets[r])
        addrs = sorted({coll.address[ch] for ch in post})
        for pos, a in enumerate(addrs):
            targets.append((r, pos, sum(1 << ch for ch in post if coll.address[ch] == a)))
    names = {ch: f"chunk {ch}" for ch in range(coll.chunks)}
    return Expectation(initial, targets, names, f"collective {coll.name!r} ({coll.ranks} ranks, {coll.chunks} chunks)")


def _few(mask: int, names: dict[int, str], shown: int = 4) -> str:
    """The first `shown` members of a set of contributions, and how many more. Only the lowest set bits
    are visited: walking every bit of a mask of 2^18 contributions per output chunk was quadratic."""
    out: list[str] = []
    rest = mask
    while rest and len(out) < shown:
        low = rest & -rest
        i = low.bit_length() - 1
        out.append(names.get(i, f"contribution {i}"))
        rest ^= low
    more = mask.bit_count() - len(out)
    return ", ".join(out) + (f" and {more} more" if more > 0 else "")


def check(geo: Geometry, exp: Expectation, memory: dict[int, Value],
          limit: int | None = None) -> tuple[list[tuple[str, str, int]], int]:
    """(code, message, rank) for the first `limit` output chunks that end wrong, and how many end wrong
    (messages are built only for those listed: a program can have 2^22 wrong output chunks)."""
    out: list[tuple[str, str, int]] = []
    wrong = 0
    for rank, index, want in exp.targets:
        loc = geo.loc(rank, "o", index)
        have = memory.get(loc)
        if have is not None and have[0] == want and not have[1]:
            continue
        wrong += 1
        if limit is not None and len(out) >= limit:
            continue
        _, name = geo.name(loc)
        where = f"o[{index}] on rank {rank}" + (f" (= {name} in place)" if name != f"o[{index}]" else "")
        if have is None:
            if loc in memory:
                out.append(("postcondition", f"{where} ends undefined: it was written from uninitialized data", rank))
            else:
                out.append(("postcondition", f"{where} is never written; it must hold "
                                             f"{_few(want, exp.names)}", rank))
            continue
        mask, dup = have
        if mask == want and not dup:
            continue
        parts = []
        missing, extra = want & ~mask, mask & ~want
        if missing:
            parts.append(f"missing {_few(missing, exp.names)}")
        if extra:
            parts.append(f"holds {_few(extra, exp.names)} that do not belong there")
        if dup:
            parts.append(f"counts {_few(dup, exp.names)} more than once")
        code = "double-count" if dup and not missing and not extra else "postcondition"
        out.append((code, f"{where} ends wrong for {exp.description}: {'; '.join(parts)}", rank))
    return out, wrong
