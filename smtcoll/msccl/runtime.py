"""What the two MSCCL runtimes define, declared once for the reader, the checker and the lowering.

Two runtimes read MSCCL XML (docs/msccl-format.md): the *legacy* one (Azure/msccl, limits in
`src/include/msccl.h`) and the *executor* (Azure/msccl-executor-nccl, limits in
`src/include/msccl/msccl_struct.h`, `MSCCL_MAX_NUM_STEPS` set at build time in `makefiles/common.mk`).
Each value names the runtime symbol it comes from, so that a change in a runtime is one edit here.
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from smtcoll import collectives

Runtime = Literal["executor", "legacy"]
EXEC: Final = "executor"
LEGACY: Final = "legacy"
RUNTIMES: Final[tuple[Runtime, Runtime]] = (EXEC, LEGACY)
PROTOCOLS: Final = ("Simple", "LL", "LL128")  # mscclProtocolStrToId
BUFFERS: Final = ("i", "o", "s")  # input, output, scratch

# Step types and what the interpreter does with them (docs/msccl-format.md, "Steps").
STEP_TYPES: Final = frozenset({"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"})
SEND_TYPES: Final = frozenset({"s", "rcs", "rrs", "rrcs"})
RECV_TYPES: Final = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})
READS_SRC: Final = frozenset({"s", "rrs", "rrc", "rrcs", "cpy", "re"})
WRITES_DST: Final = frozenset({"r", "rcs", "rrc", "rrcs", "cpy", "re"})
FUSED_TYPES: Final = frozenset({"rcs", "rrs", "rrcs"})  # a receive and a forward in one step



@attrs.frozen
class Profile:
    """What one runtime accepts, where the two differ: the checker (`check/parse_rules.py`) and the lowering
    (`lower/pipeline.py`) read these, never their own copies. A third runtime is one more profile."""

    name: Runtime
    source: str  # the repository whose parser and interpreter these values come from
    colls: frozenset[str]  # the `coll` values its parser knows (mscclAlgoCollStrToId / the legacy parser)
    algo_required: tuple[str, ...]  # the <algo> attributes its parser requires
    max_steps: int  # MSCCL_MAX_NUM_STEPS: steps of one thread block (executor: the build-time default)
    max_tbs: int  # MSCCL_MAX_NUM_THREAD_BLOCKS of one rank


def _spelled(runtime: Runtime, *others: str) -> frozenset[str]:
    """The `coll` values a runtime's parser knows: its spellings of the collectives of the table
    (smtcoll/collectives.py) and `others`, values that name no collective smtcoll defines."""
    spellings = (getattr(k, runtime) for k in collectives.TABLE)
    return frozenset(s for s in spellings if s) | frozenset(others)


PROFILES: Final[dict[Runtime, Profile]] = {
    EXEC: Profile(EXEC, "Azure/msccl-executor-nccl (src/include/msccl/msccl_struct.h, makefiles/common.mk)",
                  _spelled("executor", "send", "recv", "alltoallv"),
                  ("proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace", "minBytes",
                   "maxBytes"),
                  max_steps=64, max_tbs=1024),  # 32 * MAXCHANNELS thread blocks
    LEGACY: Profile(LEGACY, "Azure/msccl (src/include/msccl.h)",
                    _spelled("legacy", "custom"),
                    ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace"),
                    max_steps=256, max_tbs=216),  # 108 * 2 thread blocks
}

# Limits by runtime name, from the profiles (the form most readers index).
MAX_STEPS: Final[dict[str, int]] = {r: p.max_steps for r, p in PROFILES.items()}
MAX_TBS: Final[dict[str, int]] = {r: p.max_tbs for r, p in PROFILES.items()}
MAX_CHANNELS: Final = 32  # MAXCHANNELS (NCCL); `chan` is checked with `<=`, so 32 passes and overflows
MAX_TBS_PER_CHANNEL: Final = 32  # MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL, senders and receivers each
MAX_COUNT: Final = 72  # MSCCL_MAX_COUNT: 0 <= cnt < 72
MAX_REDUCE_FUSION: Final = 16  # MSCCL_MAX_REDUCE_FUSION
MAX_NODES: Final = 4096  # MAX_NODES of one parse (one rank), the readers' xml.h / msccl_parser.h
MAX_SUBS: Final = 1024  # MAX_SUBS children of one node (appended without a bounds check)
MAX_STR_LEN: Final = 255  # MAX_STR_LEN of an attribute value
MAX_DEPID: Final = 127  # dependentBid is an int8_t
MAX_INT16: Final = 32767  # offsets and dependentStep are int16_t
# Messages a connection's FIFO holds: NCCL_STEPS = 8 slots; a Simple message takes MSCCL_CHUNKSTEPS = 4.
FIFO_MESSAGES: Final[dict[str, int]] = {"Simple": 2, "LL": 8, "LL128": 8}
LEGACY_DEFAULT_MAX_BYTES: Final = 1 << 27  # the legacy runtime's maxBytes when the file has none (topo.cc)
