"""How many FIFO messages a multi-chunk send becomes, as a function of the buffer size.

Both runtimes cut a transmission of `cnt` chunks into pieces of at most `maxAllowedCount` chunks, one FIFO
message each (`for (c = 0; c < count; c += maxAllowedCount)`: msccl-executor-nccl `src/device/msccl_kernel.cu`,
microsoft/msccl `src/collectives/device/msccl_interpreter.h`), where

    maxAllowedCount = min(MSCCL_MAX_COUNT - 1, max(1, chunkEffectiveSize / ceil(nBytes / nchunksperloop)))

(executor `src/misc/msccl/msccl_setup.cc` `mscclSetupCount`; legacy `src/enqueue.cc`, the same formula).
`chunkEffectiveSize` is `stepSize * chunkSteps` with `stepSize = buffSize / NCCL_STEPS`; `chunkSteps` is
`MSCCL_CHUNKSTEPS` = 4 with Simple (1 for broadcast and reduce: `msccl_parser.cc`), 1 with LL and LL128; LL
carries half of it (flags), LL128 15 of every 16 elements. The proxy agrees: it expects
`DIVUP(cnt, maxAllowedCount)` messages per transmission (`mscclSetupProxy`).

Each message takes FIFO slots: Simple runs `ProtoSimple<MSCCL_CHUNKSTEPS/MSCCL_SLICESTEPS, MSCCL_SLICESTEPS>`,
whose `genericOp` always walks `SlicePerChunk` = 2 slices of `StepPerSlice` = 2 steps, padding empty ones
(`prims_simple.h`): 4 of the 8 slots, whatever the message's size, so the FIFO holds 2 messages. LL and
LL128 use one slot per message: 8 (`FIFO_MESSAGES` in `msccl/runtime.py`).

The sizes are the file's `minBytes..maxBytes`, taken as the `nBytes` of the formula, with the default NCCL
buffer sizes (NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE and NCCL_LL128_BUFFSIZE can change them).
"""

from __future__ import annotations

import attrs

from smtcoll import collectives

# Default NCCL buffer sizes per protocol (NCCL's DEFAULT_BUFFSIZE, DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE)
BUFFSIZE = {"Simple": 1 << 22, "LL": 8 * 512 * 8 * 16, "LL128": 120 * 640 * 8 * 8}
NCCL_STEPS = 8
MSCCL_CHUNKSTEPS = NCCL_STEPS // 2
MSCCL_MAX_COUNT = 72  # msccl_struct.h: maxAllowedCount stays below it


def effective_chunk_size(proto: str | None, coll: str | None) -> int | None:
    """`chunkEffectiveSize` in bytes for the protocol and collective; None for an unknown protocol."""
    if proto not in BUFFSIZE:
        return None
    step = BUFFSIZE[proto] // NCCL_STEPS
    if proto == "Simple":
        kind = collectives.by_spelling(coll)  # NCCL's own chunk steps where the table has them (broadcast, reduce)
        return step * (kind.chunk_steps if kind is not None and kind.chunk_steps is not None else MSCCL_CHUNKSTEPS)
    if proto == "LL":
        return step // 2
    return (step // 16) * 15  # LL128: 15 data elements per 16-element line


def max_allowed_count(effective: int, nbytes: int, nchunks: int) -> int:
    per_chunk = -(-nbytes // nchunks)
    return min(MSCCL_MAX_COUNT - 1, max(1, effective // per_chunk))


@attrs.frozen
class Regime:
    """Buffer sizes `low..high` bytes (`high` None: no upper end) at which maxAllowedCount = `count`."""

    count: int
    low: int
    high: int | None

    def sizes(self) -> str:
        return f"{self.low}..{self.high} bytes" if self.high is not None else f"{self.low} bytes and more"


def regimes(effective: int, nchunks: int, low: int, high: int | None) -> list[Regime]:
    """Every value maxAllowedCount takes for nBytes in low..high (None: unbounded), with the sizes that give
    it, from the smallest sizes (largest count) up. At most MSCCL_MAX_COUNT regimes: maxAllowedCount only
    falls as nBytes grows, and it is capped."""
    low = max(low, 1)
    if high is not None and high < low:
        return []
    out: list[Regime] = []
    x = -(-low // nchunks)  # ceil(nBytes / nchunksperloop) of the smallest size
    x_high = None if high is None else -(-high // nchunks)
    while x_high is None or x <= x_high:
        count = max_allowed_count(effective, x * nchunks, nchunks)
        # the largest chunk size with the same count (count 1 holds for every larger size)
        last = None if count == 1 else effective // count
        if x_high is not None and (last is None or last > x_high):
            last = x_high
        first_bytes = max(low, (x - 1) * nchunks + 1)
        last_bytes = None if last is None else (last * nchunks if high is None else min(high, last * nchunks))
        out.append(Regime(count, first_bytes, last_bytes))
        if last is None:
            break
        x = last + 1
    return out


def messages(cnt: int, count: int) -> int:
    """The FIFO messages a transmission of `cnt` chunks becomes at maxAllowedCount = `count`."""
    return -(-cnt // count)
