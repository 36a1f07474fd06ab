"""What the runtime's parser makes of a thread block: its transmissions, exactly as the interpreter runs them.

The parser (msccl_parser.cc, docs/msccl-format.md, "Dependencies") drops nops but gives their `depid/deps` to the next
transfer, fuses runs of `re` steps with the same destination and source buffer into one multi-source
reduction (keeping the last step's `cnt` and `hasdep`), and the interpreter numbers transmissions with its
own counter: +1 per transmission, + (dependencies - 1), + (fused reductions - 1). A `hasdep` transmission
stores that counter in its thread block's flag; a dependency `(depid, deps)` waits until the flag of
thread block `depid` reaches `deps`, i.e. for the first flagged transmission of `depid` whose counter is at
least `deps`.
"""

from __future__ import annotations

import attrs

from smtcoll.msccl.program import RECV_TYPES, SEND_TYPES, ThreadBlock

MAX_REDUCE_FUSION = 16


@attrs.frozen
class Transmission:
    type: str
    srcbuf: str
    srcoffs: tuple[int, ...]  # one per fused reduction source (one for every other type)
    dstbuf: str
    dstoff: int
    cnt: int
    deps: tuple[tuple[int, int], ...]  # (depid, deps) waited for before it starts
    hasdep: bool
    counter: int  # the interpreter's step counter when it completes (the flag value it stores)
    first: int  # element index of its first <step> (nops before it not included)
    last: int  # element index of its last <step> (fused reductions)
    line: int

    @property
    def sends(self) -> bool:
        return self.type in SEND_TYPES

    @property
    def receives(self) -> bool:
        return self.type in RECV_TYPES


def _wrap(value: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def lower(tb: ThreadBlock) -> list[Transmission]:
    """The transmissions of a complete thread block (all step attributes present)."""
    out: list[dict] = []
    deps: list[tuple[int, int]] = []
    pointer = 0
    fusing: tuple | None = None
    reductions = 0
    for index, op in enumerate(tb.steps):
        assert op.type is not None and op.depid is not None and op.deps is not None
        if op.depid >= 0:  # stored as int8_t and int16_t (mscclThreadBlock.dependentBid/dependentStep)
            deps.append((_wrap(op.depid, 8), _wrap(op.deps, 16)))
        if op.type == "nop":
            continue
        key = (op.dstbuf, op.dstoff, op.srcbuf)
        continuation = op.type == "re" and fusing == key and op.depid == -1
        if continuation:
            t = out[-1]
            t["srcoffs"] = t["srcoffs"] + (op.srcoff,)
            t.update(cnt=op.cnt, hasdep=bool(op.hasdep), last=index)
        else:
            out.append({"type": op.type, "srcbuf": op.srcbuf, "srcoffs": (op.srcoff,), "dstbuf": op.dstbuf,
                        "dstoff": op.dstoff, "cnt": op.cnt, "deps": tuple(deps[pointer:]), "hasdep": bool(op.hasdep),
                        "first": index, "last": index, "line": op.line})
            pointer = len(deps)
        if op.type == "re":
            reductions += 1
            fusing = None if (op.hasdep or reductions == MAX_REDUCE_FUSION) else key
        else:
            fusing = None
    result = []
    step = 0
    for t in out:
        if t["deps"]:
            step += len(t["deps"]) - 1
        if t["type"] == "re" and t["cnt"] > 0:
            # the kernel adds numReductions - 1 inside its per-piece loop (`if (c == 0)`), which a fused
            # transmission with cnt=0 (the last step's count) never enters
            step += len(t["srcoffs"]) - 1
        result.append(Transmission(counter=step, **t))
        step += 1
    return result
