"""An MSCCL XML algorithm as plain data: `Program` > `Gpu` > `ThreadBlock` > `Op` (one `<step>`).

Every element keeps the line of its start tag so diagnostics can point at it. Integer attributes hold
the value the runtimes would read (`strtol(s, NULL, 0)` truncated to `int`); a missing attribute is
`None` and the reader records a finding for it.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from smtcoll.findings import Finding  # noqa: F401  (one finding type: the reader's findings)

# The runtimes' vocabulary lives in `runtime.py`; these names stay importable from here.
from smtcoll.msccl.runtime import (  # noqa: F401
    BUFFERS,
    READS_SRC,
    RECV_TYPES,
    RUNTIMES,
    SEND_TYPES,
    STEP_TYPES,
    WRITES_DST,
)

STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")


# Typed converters (a plain `converter=tuple` loses the element type for the type checker).
def _ops(items: Iterable[Op]) -> tuple[Op, ...]:
    return tuple(items)


def _tbs(items: Iterable[ThreadBlock]) -> tuple[ThreadBlock, ...]:
    return tuple(items)


def _gpus(items: Iterable[Gpu]) -> tuple[Gpu, ...]:
    return tuple(items)


def _strs(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@attrs.frozen
class Op:
    """One `<step>`: all ten attributes (None when missing) and the line of the element."""

    s: int | None
    type: str | None
    srcbuf: str | None
    srcoff: int | None
    dstbuf: str | None
    dstoff: int | None
    cnt: int | None
    depid: int | None
    deps: int | None
    hasdep: int | None
    line: int = 0

    @property
    def sends(self) -> bool:
        return self.type in SEND_TYPES

    @property
    def receives(self) -> bool:
        return self.type in RECV_TYPES

    @property
    def complete(self) -> bool:
        return None not in (self.s, self.type, self.srcbuf, self.srcoff, self.dstbuf, self.dstoff, self.cnt,
                            self.depid, self.deps, self.hasdep)


@attrs.frozen
class ThreadBlock:
    id: int | None
    send: int | None
    recv: int | None
    chan: int | None
    steps: tuple[Op, ...] = attrs.field(converter=_ops)
    line: int = 0


@attrs.frozen
class Gpu:
    id: int | None
    i_chunks: int | None
    o_chunks: int | None
    s_chunks: int | None
    tbs: tuple[ThreadBlock, ...] = attrs.field(converter=_tbs)
    line: int = 0
    copies: int = 0  # TACCL/TE-CCL `<copy>` children: no runtime executes them


@attrs.frozen
class Program:
    """The `<algo>` element. `outofplace`, `min_bytes`, `max_bytes` are None in the legacy dialect."""

    name: str | None
    proto: str | None
    nchannels: int | None
    nchunksperloop: int | None
    ngpus: int | None
    coll: str | None
    inplace: int | None
    outofplace: int | None
    min_bytes: int | None
    max_bytes: int | None
    nthreads: int | None
    redop: str | None
    gpus: tuple[Gpu, ...] = attrs.field(converter=_gpus)
    line: int = 1
    attributes: tuple[str, ...] = attrs.field(default=(), converter=_strs)  # names present on <algo>

    @property
    def steps(self) -> int:
        return sum(len(tb.steps) for g in self.gpus for tb in g.tbs)

    @property
    def dialect(self) -> str:
        """`executor` when the file carries the attributes only msccl-executor-nccl reads, else `legacy`."""
        return "executor" if "outofplace" in self.attributes else "legacy"
