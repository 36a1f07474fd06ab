"""Waits that messages imply (`lower/implied.py`): where a rank would wait for more thread blocks than `depid`
(an int8_t) names, a write's wait on an earlier send of its rank is dropped when a chain of messages orders
them anyway. The program must still verify: the checker decides races by the same happens-before order."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.lower import CannotLower, LowerOptions, lower, verify_lowered
from smtcoll.msccl.runtime import MAX_DEPID
from smtcoll.msccl.writer import write_program
from smtcoll.synth.constructions.forest import forest


def _waited(low) -> int:
    """The most thread blocks of one rank that set a flag some step waits for."""
    return max(len({s.depid for t in g.tbs for s in t.steps if s.depid is not None and s.depid >= 0})
               for g in low.program.gpus)


def test_tree_allreduce_at_8_instances_fits_depid_and_verifies(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """mi250's forest Allreduce with 7 trees per root: every rank receives its final values where it sent its
    partial sums from, so with those waits a rank waits for 192 thread blocks (its senders too); the final
    value came back down the tree the partial went up, so the waits are implied and dropped: 96."""
    topo = library.topology("mi250")
    sched = forest(topo, library.collective("allreduce", 16), trees=7)
    options = LowerOptions(8, "Simple", "executor", "both")
    low = lower(sched, options)
    assert _waited(low) <= MAX_DEPID + 1
    out = tmp_path / "ar.xml"
    out.write_text(write_program(low.program))
    ok, report = verify_lowered(low, out)
    assert ok, report.violations[:3]  # no race: every dropped wait is ordered by messages

    import smtcoll.lower.pipeline as pipeline
    import smtcoll.lower.spread as spread

    monkeypatch.setattr(pipeline, "drop_implied", lambda ops: 0)  # keep every wait: refused, as before
    monkeypatch.setattr(spread, "fitted_segments", lambda messages, per_tb, segments: segments)  # test_lower_fit
    with pytest.raises(CannotLower, match="depid"):
        lower(sched, options)


def test_programs_within_depid_keep_their_waits() -> None:
    """A program that fits is written as `dependencies` made it: the pass runs only where it must."""
    topo = library.topology("mi250")
    sched = forest(topo, library.collective("allreduce", 16), trees=2)
    low = lower(sched, LowerOptions(1, "Simple", "executor"))
    sends_waited = sum(1 for g in low.program.gpus for t in g.tbs if t.send is not None and t.send >= 0
                       and (t.recv is None or t.recv < 0) and any(s.hasdep == 1 for s in t.steps))
    assert sends_waited > 0  # the write-after-read waits on the senders are still there
