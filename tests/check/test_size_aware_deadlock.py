"""Size-aware deadlock: both runtimes send a multi-chunk step as FIFO messages of at most maxAllowedCount
chunks, maxAllowedCount = max(1, chunkEffectiveSize / ceil(nBytes / nchunksperloop)) (msccl_setup.cc,
legacy enqueue.cc), and a Simple message takes 4 of the FIFO's 8 slots (prims_simple.h), an LL message 1.
A program deadlocks at the sizes where its sends become more messages than the FIFO holds: an error when
that is every size the file is selected for, a warning naming the sizes when only some, a note when none.

The sizes of each test come from the runtime's formula (`regime` below), not from one file."""

from __future__ import annotations

import itertools
from pathlib import Path

from helpers.xmlgen import algo, gpu, step, tb, write

from smtcoll.check import messages
from smtcoll.check.program import check_program_file, per_chunk_threshold
from smtcoll.msccl.reader import read_program

CHUNKS = 6  # nchunksperloop of the programs below: 2 ranks x 3 chunks
EFFECTIVE = (4 << 20) // 8 * 4  # Simple, allgather: stepSize x MSCCL_CHUNKSTEPS
THRESHOLD = CHUNKS * (EFFECTIVE // 2)  # above it maxAllowedCount = 1


def regime(count: int, chunks: int = CHUNKS, effective: int = EFFECTIVE) -> tuple[int, int]:
    """The buffer sizes (bytes) at which maxAllowedCount = count, from the formula itself."""
    sizes = [n for n in range(chunks, 4 * THRESHOLD, chunks * 997)
             if messages.max_allowed_count(effective, n, chunks) == count]
    return min(sizes), max(sizes)


def send_then_receive(min_bytes: int, max_bytes: int, per_rank: int = 3, proto: str = "Simple") -> str:
    """Each rank sends its `per_rank` chunks in one step, then receives the peer's: one message per step
    fits the FIFO; as many messages as the FIFO holds plus one, on both sides, do not, and neither rank gets
    to its receive."""
    def rank(r: int) -> str:
        peer = 1 - r
        k = per_rank
        return gpu(r, k, 2 * k, 0,
                   tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", k * r, cnt=k, hasdep=1)),
                   tb(1, peer, peer, 0, step(0, "s", "o", k * r, "o", k * r, cnt=k, depid=0, deps=0),
                      step(1, "r", "o", k * peer, "o", k * peer, cnt=k)))
    text = algo(rank(0), rank(1), chunks=2 * per_rank, max_bytes=max_bytes, proto=proto)
    return text.replace('minBytes="0"', f'minBytes="{min_bytes}"')


def verdict(tmp_path: Path, text: str) -> tuple[str, dict[str, str]]:
    r = check_program_file(write(tmp_path, text))
    return r.verdict, {v.code: v.severity for v in r.violations}


def test_threshold_follows_the_executor_formula(tmp_path: Path) -> None:
    p = read_program(write(tmp_path, send_then_receive(0, 1 << 30))).program
    assert per_chunk_threshold(p) == THRESHOLD
    assert messages.max_allowed_count(EFFECTIVE, THRESHOLD, CHUNKS) == 2
    assert messages.max_allowed_count(EFFECTIVE, THRESHOLD + 1, CHUNKS) == 1


def test_regimes_cover_the_range_with_the_formulas_counts() -> None:
    low, high = 1, 8 * THRESHOLD
    rs = messages.regimes(EFFECTIVE, CHUNKS, low, high)
    assert rs[0].low == low and rs[-1].high == high and rs[-1].count == 1
    for a, b in itertools.pairwise(rs):
        assert a.high is not None and b.low == a.high + 1 and b.count < a.count  # contiguous, falling
    for r in rs:  # every size of a regime gives its count
        assert r.high is not None  # `regimes` between two sizes has an upper end
        for n in (r.low, r.high, (r.low + r.high) // 2):
            assert messages.max_allowed_count(EFFECTIVE, n, CHUNKS) == r.count


def test_deadlock_at_every_selectable_size_is_an_error(tmp_path: Path) -> None:
    v, codes = verdict(tmp_path, send_then_receive(THRESHOLD + 1, 1 << 30))
    assert v == "error" and codes.get("deadlock") == "error"


def test_deadlock_at_some_selectable_sizes_is_a_warning_naming_them(tmp_path: Path) -> None:
    r = check_program_file(write(tmp_path, send_then_receive(0, 1 << 30)))
    assert r.verdict == "ok"
    f = next(v for v in r.violations if v.code == "fifo-capacity")
    assert f.severity == "warning" and f"{THRESHOLD + 1}..{1 << 30} bytes" in f.message


def test_deadlock_outside_the_selected_sizes_is_only_info(tmp_path: Path) -> None:
    v, codes = verdict(tmp_path, send_then_receive(0, 1 << 20))
    assert v == "ok" and codes.get("fifo-capacity") == "info"


def test_middle_sizes_split_a_send_into_three_messages(tmp_path: Path) -> None:
    # cnt = 6 at maxAllowedCount = 2 is 3 Simple messages, one more than the FIFO holds: a deadlock at
    # every size of that regime, far below the per-chunk threshold (issue 20, class 2)
    low, high = regime(2, chunks=12)
    v, codes = verdict(tmp_path, send_then_receive(low, high, per_rank=6))
    assert v == "error" and codes.get("deadlock") == "error"
    # selected for those sizes and smaller ones, where it is one message: a warning naming the sizes
    r = check_program_file(write(tmp_path, send_then_receive(0, high, per_rank=6)))
    f = next(v for v in r.violations if v.code == "fifo-capacity")
    assert r.verdict == "ok" and f.severity == "warning" and "maxAllowedCount 2" in f.message
    # at maxAllowedCount = 3 the same send is 2 messages: it fits
    low, high = regime(3, chunks=12)
    v, codes = verdict(tmp_path, send_then_receive(low, high, per_rank=6))
    assert v == "ok" and "deadlock" not in codes


def test_ll_holds_eight_messages(tmp_path: Path) -> None:
    # LL: a message takes one of the 8 slots. 9 chunks per send deadlock when each is its own message
    # (maxAllowedCount = 1, large buffers), 8 do not
    ll = messages.effective_chunk_size("LL", "allgather")
    assert ll is not None
    for per_rank, deadlocks in ((9, True), (8, False)):
        low = 2 * per_rank * ll  # maxAllowedCount = 1 from here on
        assert messages.max_allowed_count(ll, low, 2 * per_rank) == 1
        v, codes = verdict(tmp_path, send_then_receive(low, 1 << 30, per_rank=per_rank, proto="LL"))
        assert (v == "error" and codes.get("deadlock") == "error") == deadlocks, codes


def test_sizes_with_the_same_message_counts_share_the_verdict(tmp_path: Path) -> None:
    # cnt = 9 is 3 messages at maxAllowedCount 4 and at 3 (one simulation for both): selected for exactly
    # those sizes it deadlocks at every one of them, an error
    low, _ = regime(4, chunks=18)
    _, high = regime(3, chunks=18)
    v, codes = verdict(tmp_path, send_then_receive(low, high, per_rank=9))
    assert v == "error" and codes.get("deadlock") == "error"
