"""Programs that fit the runtimes' `depid` (an int8_t: 128 thread blocks a rank can wait for) only when a
spread program's light connections use just the channels they need (`spread.fitted_segments`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.check.parse_rules import rank_nodes
from smtcoll.lower import CannotLower, LowerOptions, lower, verify_lowered
from smtcoll.model import Schedule, Send, Step
from smtcoll.msccl.runtime import MAX_DEPID, MAX_NODES
from smtcoll.msccl.writer import write_program


def _relay_broadcast() -> Schedule:
    """Broadcast from rank 1 on 7 ranks: 49 chunks down the chain 1-0-2-3-4-5-6 (49 messages a connection:
    16 instances spread each over 2 channels), and two chunks through each of ranks 2..6, which rank 0
    receives and forwards to the one rank that did not get them: rank 0 forwards from 6 peers."""
    topo = library.topology("fully-connected:7")
    coll = library.collective("broadcast", 7, 1, 59)
    chain = [1, 0, 2, 3, 4, 5, 6]
    steps: list[list[Send]] = [[] for _ in range(54)]
    for t in range(49):
        for h in range(6):
            steps[t + h].append(Send(t, chain[h], chain[h + 1]))
    side = [2, 3, 4, 5, 6]
    for i, k in enumerate(side):
        nxt = side[(i + 1) % 5]
        for c in (49 + 2 * i, 50 + 2 * i):
            steps[0].append(Send(c, 1, k))
            steps[1] += [Send(c, k, j) for j in (0, *side) if j not in (k, nxt)]
            steps[2].append(Send(c, 0, nxt))
    return Schedule(topo, coll, [Step(max(Counter((s.src, s.dst) for s in ss).values()), ss) for ss in steps])


def _sending_only(tb) -> bool:
    return tb.send is not None and tb.send >= 0 and (tb.recv is None or tb.recv < 0)


def _waited(program) -> int:
    return max(len({s.depid for t in g.tbs for s in t.steps if s.depid >= 0}) for g in program.gpus)


def test_light_connections_on_fewer_channels_fit_depid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection spread over both channels of its instance: rank 0 waits for its 6 peers' receiving
    thread blocks on 32 channels, 192. The 2-message connections on one channel each: 2 x 16 + 5 x 16 = 112,
    and the program verifies for the executor within the readers' XML nodes."""
    sched = _relay_broadcast()
    options = LowerOptions(16, "Simple", "executor")
    low = lower(sched, options)
    assert low.program.nchannels == 32
    assert _waited(low.program) == 112 <= MAX_DEPID + 1
    assert max(rank_nodes(low.program, g) for g in low.program.gpus) <= MAX_NODES
    out = tmp_path / "b.xml"
    out.write_text(write_program(low.program))
    ok, report = verify_lowered(low, out)
    assert ok, report.violations[:3]

    import smtcoll.lower.spread as spread

    monkeypatch.setattr(spread, "fitted_segments", lambda messages, per_tb, segments: segments)
    with pytest.raises(CannotLower, match="waits for 192 of its thread blocks"):
        lower(sched, options)


def test_scratch_without_reuse_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last try where depid is short: every scratch value in a slot of its own, so no write waits for
    the senders of a slot's previous value. More scratch, no sending thread block waited for a reuse."""
    import smtcoll.lower.pipeline as pipeline
    from smtcoll.synth.scale import engine

    topo = library.topology("line:4")
    sched = engine.synthesize(topo, library.collective("reducescatter", 4, None, 4)).schedule
    reused = lower(sched, LowerOptions(2, "Simple", "executor"))
    assert any(_sending_only(t) and any(s.hasdep for s in t.steps)
               for g in reused.program.gpus for t in g.tbs)  # a reused slot waits for its last sender
    real = pipeline.allocate_scratch
    monkeypatch.setattr(pipeline, "allocate_scratch", lambda ops, reuse=True: real(ops, reuse=False))
    low = lower(sched, LowerOptions(2, "Simple", "executor"))
    assert low.stats["scratch_chunks"] > reused.stats["scratch_chunks"]
    sending_waited = [t for g in low.program.gpus for t in g.tbs if _sending_only(t)
                      and any(s.hasdep for s in t.steps)]
    assert not sending_waited
    out = tmp_path / "rs.xml"
    out.write_text(write_program(low.program))
    ok, report = verify_lowered(low, out)
    assert ok, report.violations[:3]
