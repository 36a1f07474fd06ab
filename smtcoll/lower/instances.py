"""Stage 7, instances: the program replicated over channels with interleaved chunks (index x -> x*I + k),
the MSCCLang default, which keeps the per-rank shares of the buffer layout intact."""

from __future__ import annotations

from smtcoll.lower.ops import Loc, LOp


def replicate(ops: list[LOp], count: int, fresh: bool = False) -> list[LOp]:
    """Replicate the base operations for every instance; chunk index x becomes x*count + k. `fresh`:
    new operations even for one instance (the base stays untouched by the later stages)."""
    if count == 1 and not fresh:
        return ops
    out: list[LOp] = []
    copies: dict[tuple[int, int], LOp] = {}

    def move(loc: Loc | None, k: int) -> Loc | None:
        return None if loc is None else (loc[0], loc[1] * count + k)

    for k in range(count):
        for op in ops:
            new = LOp(op.rank, op.time, op.type, op.send, op.recv, move(op.src, k), move(op.dst, k), k,
                      peers=op.peers, local=op.local)
            copies[(id(op), k)] = new
            out.append(new)
    for k in range(count):
        for op in ops:
            if op.partner is not None:
                copies[(id(op), k)].partner = copies[(id(op.partner), k)]
    return out
