"""Alltoall straight over the NICs where they join every GPU pair of two nodes (mi250 x N, issue 24): a
Latin square of rounds between the nodes, the node's own Alltoall alongside; at the entry bound."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.model import SwitchGroup, Topology
from smtcoll.synth.scale import direct, engine


@pytest.mark.parametrize("nodes, rounds", [(3, 32), (4, 48)])
def test_mi250_alltoall_at_the_entry_bound(nodes: int, rounds: int) -> None:
    # was 120 rounds on mi250 x 3 (the routing LP too large, the greedy answered)
    t = library.topology("mi250", nodes)
    r = engine.synthesize(t, library.collective("alltoall", t.ranks))
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.method.startswith("straight over the NICs")
    assert len(r.schedule.steps) == r.schedule.rounds == rounds == r.bounds.rounds(1)


def test_two_chunks_per_pair_and_every_nic_busy_every_round() -> None:
    t = library.topology("mi250", 2)
    coll = library.collective("alltoall", t.ranks, None, 2)
    s = direct.direct_alltoall(t, coll, 1000, lambda tt, c: engine._plain(tt, c, None)[0])
    assert s is not None and check_schedule(s).verdict == "ok"
    assert len(s.steps) == 32  # 512 chunks into a node over 16 NICs
    for step in s.steps:
        across = [x for x in step.sends if x.src // 16 != x.dst // 16]
        assert sorted(x.src for x in across) == list(range(32)) == sorted(x.dst for x in across)


def test_not_where_some_gpu_pair_of_two_nodes_has_no_link() -> None:
    for name in ("a100", "dgx2", "ndv2"):  # rails, odd-to-even NICs, one NIC per node
        t = library.topology(name, 2)
        coll = library.collective("alltoall", t.ranks)
        assert direct.direct_alltoall(t, coll, 1000, lambda tt, c: engine._plain(tt, c, None)[0]) is None


# --- switch domains (nvl72-like, issue 24 session 10): tested on a size the methods were not tuned on ---

@pytest.mark.parametrize("name, chunks", [("allgather", 1), ("allgather", 2), ("alltoall", 1)])
def test_switch_domain_latin_square_at_the_port_bound(name: str, chunks: int) -> None:
    t = library.topology("hub-and-spoke:40")
    r = engine.synthesize(t, library.collective(name, 40, None, chunks))
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.method.startswith("straight through the switch")
    # the greedy gave 51 (Allgather) and 63 (Alltoall) steps here; the port bound is 39 per chunk
    assert len(r.schedule.steps) == r.schedule.rounds == 39 * chunks == r.to_json()["steps_bound"]


def test_switch_domain_refused_where_one_group_bounds_the_whole_switch() -> None:
    # one chunk per round through the whole switch: the Latin square's 40 sends a round do not fit
    hub = library.topology("hub-and-spoke:40")
    bus = Topology("bus", 40, hub.links, [SwitchGroup(range(40), range(40), 1, "bus")])
    assert direct.switch_direct(bus, library.collective("allgather", 40), 10_000) is None
    full = library.topology("fully-connected:40")  # no switch groups: not a switch domain
    assert direct.switch_direct(full, library.collective("allgather", 40), 10_000) is None


def test_switch_domain_allreduce_folds_into_a_power_of_two() -> None:
    t = library.topology("hub-and-spoke:40")
    r = engine.synthesize(t, library.collective("allreduce", 40))
    assert check_schedule(r.schedule).verdict == "ok"
    assert r.method.startswith("recursive doubling, the ranks above a power of two folded")
    # fold 8 ranks in, 5 doublings over 32, unfold: 7 steps; the bound is ceil(log2 40) = 6 (was 12)
    assert len(r.schedule.steps) == 7 and r.bounds.least_steps(True, 1) == 6
