"""Long schedules spread over channels (issue 24): a connection's messages in more thread blocks than
one, so that every thread block stays within the runtimes' step limits, and the program still verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.lower import CannotLower, LowerOptions, lower, verify_lowered
from smtcoll.model import Schedule, Send, Step
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.msccl.writer import write_program
from smtcoll.synth.scale import engine


def _allgather(topo: str, chunks: int):
    t = library.topology(topo)
    return engine.synthesize(t, library.collective("allgather", t.ranks, None, chunks)).schedule


@pytest.mark.parametrize("runtime, channels", [("auto", 2), ("legacy", 1)])
def test_a_long_connection_spreads_over_channels(runtime: str, channels: int, tmp_path: Path) -> None:
    sched = _allgather("ring:4", 48)  # 144 chunks into each rank over 2 links: 72 messages per connection
    low = lower(sched, LowerOptions(runtime=runtime))
    limit = min(MAX_STEPS[r] for r in low.runtimes)
    assert low.program.nchannels == channels
    assert 64 < 72 and low.stats["max_tb_steps"] <= limit
    assert {t.chan for g in low.program.gpus for t in g.tbs} == set(range(channels))
    out = tmp_path / "a.xml"
    out.write_text(write_program(low.program))
    ok, report = verify_lowered(low, out)
    assert ok, report.violations[:3]


def test_instances_and_spreading_share_the_channels(tmp_path: Path) -> None:
    low = lower(_allgather("ring:4", 48), LowerOptions(instances=2))
    assert low.program.nchannels == 4 and low.stats["max_tb_steps"] <= 64
    out = tmp_path / "a.xml"
    out.write_text(write_program(low.program))
    assert verify_lowered(low, out)[0]


def test_a_connection_no_spreading_can_fit_names_the_limit() -> None:
    # 2100 messages on one connection in one step of 2100 rounds: more than 32 channels x 64 steps
    t = library.topology("ring:2")
    coll = library.collective("allgather", 2, None, 2100)
    sched = Schedule(t, coll, [Step(2100, [Send(coll.address[c], r, 1 - r) for r, c in coll.pre])])
    with pytest.raises(CannotLower, match=r"even with each connection spread over 32 channels; the executor "
                                          r"runtime allows 64 per thread block \(--runtime legacy allows 256\)"):
        lower(sched, LowerOptions(runtime="auto"))


def test_a_spread_connection_deals_its_messages_round_robin() -> None:
    """Consecutive messages of a connection go to alternate channels, so that every channel carries its
    share from the start (contiguous runs left the later channel idle until its first message)."""
    from smtcoll.lower.ops import LOp
    from smtcoll.lower.spread import spread

    ops = [LOp(0, (t,), "s", 1, -1, None, None) for t in range(6)]
    spread(ops, 2)
    assert [op.instance for op in ops] == [0, 1, 0, 1, 0, 1]


def test_a_spread_program_is_timed_near_the_unspread_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same mi250 tree packing lowered with 8 instances, its 4-lane connections spread over 3 channels
    each: within 10% of the time of the unspread program (the sweep's model, 1 GiB)."""
    import smtcoll.lower.pipeline as lp
    from smtcoll.sweep.cost import schedule_time
    from smtcoll.synth.constructions import build

    topo = library.topology("mi250")
    s = build("forest", topo, library.collective("allgather", 16))
    spread_t = schedule_time(s, "Simple", 8, 1 << 30)
    monkeypatch.setattr(lp, "MAX_STEPS", dict.fromkeys(lp.MAX_STEPS, 1024))  # one thread block per connection
    whole_t = schedule_time(s, "Simple", 8, 1 << 30)
    assert spread_t is not None and whole_t is not None
    assert spread_t <= whole_t * 11 / 10


def _mi250_alltoall():
    t = library.topology("mi250", 3)
    return engine.synthesize(t, library.collective("alltoall", t.ranks)).schedule


def test_a_rank_with_more_peers_than_a_channel_allows_spreads_its_peers(tmp_path: Path) -> None:
    # mi250 x 3 Alltoall: every GCD sends to and receives from 35-36 peers (32 over its NIC, 3-4 over xGMI), and
    # a channel has at most 32 sending and 32 receiving thread blocks per rank: 2 channels, each under 32
    from collections import Counter

    from smtcoll.msccl.runtime import MAX_TBS_PER_CHANNEL

    low = lower(_mi250_alltoall())
    assert low.program.nchannels == 2
    for g in low.program.gpus:
        sends = Counter(t.chan for t in g.tbs if t.send is not None and t.send >= 0)
        recvs = Counter(t.chan for t in g.tbs if t.recv is not None and t.recv >= 0)
        assert sum(sends.values()) == sum(recvs.values()) in (35, 36)
        assert max(sends.values()) <= MAX_TBS_PER_CHANNEL and max(recvs.values()) <= MAX_TBS_PER_CHANNEL
    out = tmp_path / "a.xml"
    out.write_text(write_program(low.program))
    ok, report = verify_lowered(low, out)
    assert ok, report.violations[:3]


def test_peers_no_channel_count_can_hold_name_the_limit() -> None:
    # 2 channels of peers per instance: 17 instances would need 34 of the 32 channels
    with pytest.raises(CannotLower, match=r"need 2 channels per instance, 34 for 17 instances; the runtimes "
                                          r"allow 32 \(use fewer --instances\)"):
        lower(_mi250_alltoall(), LowerOptions(instances=17))
