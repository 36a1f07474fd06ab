"""One-chunk Allreduce on nodes whose GPUs share NICs (issue 24, session 13; pcie4slow, shared2nic8 and
dualplane8 were the rows to close, these machines were not in them): one lane per shared NIC, windows of
nodes doubled or grown by one over the lanes, copies by a port-aware doubling. Every schedule is checked and
held within 1.5x of the inflow bound."""

from __future__ import annotations

from pathlib import Path

from helpers.machines import quad_allreduce

from smtcoll import library
from smtcoll.bounds import search_bounds
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import engine, lanes_allreduce
from smtcoll.synth.scale.lanes_allreduce import _factorizations, _sequence


def test_one_shared_nic_five_nodes(tmp_path: Path) -> None:
    # node sums 2 steps, windows 1, 2, 4, 5 over the one lane (3 NIC rounds), copies 1 -> 2 -> 4: 7 steps
    topo, coll = quad_allreduce(tmp_path, [[0, 1, 2, 3]], 5)
    s = lanes_allreduce.lanes_allreduce(topo, coll)
    assert s is not None and check_schedule(s).verdict == "ok"
    assert len(s.steps) == 7
    b = search_bounds(topo, coll).least_steps(True, 1)
    assert b == 6 and len(s.steps) <= 1.5 * b  # the inflow bound (tests/bounds/test_inflow.py)
    scaled = engine.synthesize(topo, coll)
    assert len(scaled.schedule.steps) == 7 and "lane" in scaled.method


def test_two_nics_of_two_gpus_on_one_rail(tmp_path: Path) -> None:
    for nodes, steps, bound in ((2, 4, 3), (4, 5, 4), (6, 6, 4)):
        topo, coll = quad_allreduce(tmp_path, [[0, 1], [2, 3]], nodes)
        s = lanes_allreduce.lanes_allreduce(topo, coll)
        assert s is not None and check_schedule(s).verdict == "ok"
        assert len(s.steps) == steps
        assert search_bounds(topo, coll).least_steps(True, 1) == bound
        assert len(s.steps) <= 1.5 * bound


def test_no_lanes_where_every_gpu_has_its_own_nic(tmp_path: Path) -> None:
    topo, coll = quad_allreduce(tmp_path, [[0], [1], [2], [3]], 3)
    assert lanes_allreduce.lanes_allreduce(topo, coll) is None
    topo = library.topology("mi250", 2)
    assert lanes_allreduce.lanes_allreduce(topo, library.collective("allreduce", topo.ranks)) is None


def test_windows_sequence_and_factorizations() -> None:
    # 5 = 1 -> 2 -> 4 -> 5: double, double, add one; 6 = 1 -> 2 -> 3 -> 6
    assert _sequence(5) == [True, True, False]
    assert _sequence(6) == [True, False, True]
    assert _sequence(2) == [True]
    assert _factorizations(8) == [(8,), (4, 2), (2, 4), (2, 2, 2)]


SWITCH6_PAIRS = """
[topology]
name = "sw6pairs"
generator = "hub-and-spoke:6"
""" + "".join(f"""
[[topology.nics]]
senders = [{2 * r}, {2 * r + 1}]
receivers = [{2 * r}, {2 * r + 1}]
bandwidth = 1
rail = {r}
""" for r in range(3))


def test_folded_node_sums_on_a_switch_node_of_six(tmp_path: Path) -> None:
    # 6 GPUs on a switch of one chunk a round (not a power of two: no recursive doubling), a NIC per GPU pair
    # (nvl36's shape, session 14): the plain GPUs fold into the core, 4 doubling, the folded ones take the sum
    # back while the receivers' windows start; the engine's phases took 8 / 8 / 10 steps
    from smtcoll import specs

    path = tmp_path / "sw6pairs.toml"
    path.write_text(SWITCH6_PAIRS)
    for nodes, steps, bound in ((3, 6, 4), (4, 6, 4), (5, 7, 4)):
        topo = specs.load_topology(path, nodes)
        coll = library.collective("allreduce", topo.ranks)
        s = lanes_allreduce.lanes_allreduce(topo, coll)
        assert s is not None and check_schedule(s).verdict == "ok"
        assert len(s.steps) == steps
        assert search_bounds(topo, coll).least_steps(True, 1) == bound
        if nodes < 5:
            assert len(s.steps) <= 1.5 * bound
        if nodes == 3:  # the engine offers it (its phases: 8)
            scaled = engine.synthesize(topo, coll)
            assert len(scaled.schedule.steps) == steps and "lane" in scaled.method
    # the two folded GPUs are plain ones (their lanes' receivers stay in the doubling core)
    assert lanes_allreduce._fold_order(6, [(0, 1), (2, 3), (4, 5)], top=False) == [0, 2, 4, 1, 3, 5]
