"""The lowering's working values: a `Transfer` (a send with an observable effect) and an `LOp` (one
operation of the program before thread blocks are numbered)."""

from __future__ import annotations

import attrs

Loc = tuple[str, int]  # (buffer, index); scratch indices are value ids until slots are allocated


@attrs.frozen
class Transfer:
    step: int
    index: int
    addr: int
    src: int
    dst: int
    action: str  # "copy" (non-combining), "add" (rrc), "replace" (r)


@attrs.define(eq=False)
class LOp:
    """One step of the program before thread blocks are numbered."""

    rank: int
    time: tuple[int, ...]
    type: str
    send: int
    recv: int
    src: Loc | None
    dst: Loc | None
    instance: int = 0
    tb: int = -1
    pos: int = -1
    deps: list[LOp] = attrs.field(factory=list)
    hasdep: bool = False
    partner: LOp | None = None  # the other side of a message; its location fills the informational fields
    peers: tuple[int, int] | None = None  # (send, recv) of its thread block, when fusion paired two peers
    local: tuple[int, int] = (0, 0)  # which local-copy thread block a `cpy` runs on
