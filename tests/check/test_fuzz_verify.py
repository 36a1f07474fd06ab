"""Fuzzing `smtcoll verify` with mutated corpus files: whatever the input, a verdict (exit code 0, 1 or 2),
a message for every finding, no traceback, bounded time. In process for speed (the same `check_file` the
command runs), plus a few whole-command runs. The long campaign is benchmarks/fuzz_verify.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.xml_mutations import check_mutant, encodings, mutants, seeds, text_edits, tree_edits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
SEEDS = seeds()
FAST = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(st.sampled_from(SEEDS).flatmap(tree_edits))
def test_structural_and_attribute_mutants(data: bytes) -> None:
    check_mutant(data)


@FAST
@given(st.sampled_from(SEEDS).flatmap(text_edits))
def test_truncated_nested_and_garbled_text(data: bytes) -> None:
    report = check_mutant(data)
    if data.startswith(b"<?xml"):
        assert report.verdict != "ok"  # the runtimes' readers refuse declarations


@FAST
@given(st.sampled_from(SEEDS).flatmap(encodings))
def test_other_encodings_and_byte_order_marks(data: bytes) -> None:
    check_mutant(data)


@FAST
@given(mutants(SEEDS))
def test_combined_mutants(data: bytes) -> None:
    check_mutant(data)


def test_unmutated_seeds_keep_their_verdict() -> None:
    verdicts = {check_mutant(s).verdict for s in SEEDS}
    assert ("ok" in verdicts and "error" in verdicts) or len(SEEDS) == 2


MUTANTS = {
    "truncated": lambda s: s[: len(s) // 2],
    "utf-16": lambda s: s.decode().encode("utf-16"),
    "deep": lambda s: b"<algo>" + b"<x>" * 30000 + b"</x>" * 30000 + b"</algo>",
    "garbage ngpus": lambda s: s.replace(b'ngpus="', b'ngpus="x', 1),
    "binary": lambda s: bytes(range(256)) * 4,
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_whole_command_on_mutants(name: str, tmp_path: Path) -> None:
    path = tmp_path / "m.xml"
    path.write_bytes(MUTANTS[name](SEEDS[0]))
    for fmt in ("text", "github"):
        run = subprocess.run([sys.executable, "-m", "smtcoll", "verify", "--format", fmt, str(path)], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode in (1, 2), run.stdout + run.stderr
        assert str(path) in run.stdout and "Traceback" not in run.stdout + run.stderr


EDGE_VALUES = ["0", "-1", "1", "2147483647", "-2147483648", "65536", "4097", "0x0", "x"]
ATTRS = ["ngpus", "nchunksperloop", "nchannels", "inplace", "outofplace", "maxBytes", "id", "i_chunks", "o_chunks",
         "s_chunks", "send", "recv", "chan", "s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep"]


@pytest.mark.parametrize("attr", ATTRS)
def test_every_attribute_at_its_edge_values(attr: str) -> None:
    """A deterministic sweep: the first, then every occurrence of one attribute set to each edge value."""
    import re
    pattern = re.compile(rb' %s="[^"]*"' % attr.encode())
    for seed in SEEDS[:6]:
        for value in EDGE_VALUES:
            new = b' %s="%s"' % (attr.encode(), value.encode())
            check_mutant(pattern.sub(new, seed, count=1))
            check_mutant(pattern.sub(new, seed))
