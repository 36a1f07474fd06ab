"""Size-aware deadlock: the executor sends every chunk of a multi-chunk step as its own FIFO message when a
chunk is larger than half its effective chunk size (msccl_setup.cc: maxAllowedCount = max(1,
chunkEffectiveSize / ceil(nBytes / nchunksperloop))). A program whose per-chunk messages overflow the Simple
FIFO (2 messages) deadlocks exactly at those sizes: an error when minBytes puts every selectable size there,
a warning naming the sizes otherwise."""

from __future__ import annotations

from pathlib import Path

from helpers.xmlgen import algo, gpu, step, tb, write

from smtcoll.check.program import check_program_file, per_chunk_threshold
from smtcoll.msccl.reader import read_program

THRESHOLD = 6 * (4 << 20) // 8 * 4 // 2  # Simple allgather, 6 chunks: C * floor(chunkEffectiveSize / 2)


def send_three_then_receive(min_bytes: int, max_bytes: int) -> str:
    """Each rank sends its 3 chunks in one cnt=3 step, then receives the peer's: one message per step fits
    the FIFO; three per-chunk messages on both sides do not, and neither rank gets to its receive."""
    def rank(r: int) -> str:
        peer = 1 - r
        return gpu(r, 3, 6, 0,
                   tb(0, -1, -1, 0, step(0, "cpy", "i", 0, "o", 3 * r, cnt=3, hasdep=1)),
                   tb(1, peer, peer, 0, step(0, "s", "o", 3 * r, "o", 3 * r, cnt=3, depid=0, deps=0),
                      step(1, "r", "o", 3 * peer, "o", 3 * peer, cnt=3)))
    text = algo(rank(0), rank(1), chunks=6, max_bytes=max_bytes)
    return text.replace('minBytes="0"', f'minBytes="{min_bytes}"')


def verdict(tmp_path: Path, text: str) -> tuple[str, dict[str, str]]:
    r = check_program_file(write(tmp_path, text))
    return r.verdict, {v.code: v.severity for v in r.violations}


def test_threshold_follows_the_executor_formula(tmp_path: Path) -> None:
    p = read_program(write(tmp_path, send_three_then_receive(0, 1 << 30))).program
    assert per_chunk_threshold(p) == THRESHOLD


def test_deadlock_at_every_selectable_size_is_an_error(tmp_path: Path) -> None:
    v, codes = verdict(tmp_path, send_three_then_receive(THRESHOLD + 1, 1 << 30))
    assert v == "error" and codes.get("deadlock") == "error"


def test_deadlock_at_some_sizes_is_a_warning_naming_them(tmp_path: Path) -> None:
    r = check_program_file(write(tmp_path, send_three_then_receive(0, 1 << 30)))
    assert r.verdict == "ok"
    f = next(v for v in r.violations if v.code == "fifo-capacity")
    assert f.severity == "warning" and f"over {THRESHOLD} bytes" in f.message


def test_deadlock_outside_the_selected_sizes_is_only_info(tmp_path: Path) -> None:
    v, codes = verdict(tmp_path, send_three_then_receive(0, 1 << 20))
    assert v == "ok" and codes.get("fifo-capacity") == "info"
