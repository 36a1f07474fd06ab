"""Allgather on machines of several nodes (issue 24): the conveyor rings fed by the NICs
(smtcoll.synth.scale.hierarchy) reach the receive bound on DGX-2 clusters and beat the link greedy on
MI250 nodes; every schedule is accepted by the checker and never below the bound."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.bounds.entry import entry_bound, node_of
from smtcoll.bounds.holdings import holdings_bound
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import engine, hierarchy, matching


def _allgather(topo: str, nodes: int):
    t = library.topology(topo, nodes)
    return t, library.collective("allgather", t.ranks, None, 1)


@pytest.mark.parametrize("nodes", [4, pytest.param(8, marks=pytest.mark.slow)])
def test_dgx2_cluster_at_the_receive_bound(nodes: int) -> None:
    # 16 GPUs per node behind one switch (one chunk in and out of each GPU per round), 8 NICs per node:
    # a GPU without a NIC link must receive a new chunk every round, P-1 rounds in all
    r = engine.synthesize(*_allgather("dgx2", nodes))
    p = 16 * nodes
    assert r.bounds.least_steps(True, 1) == p - 1
    assert len(r.schedule.steps) == r.schedule.rounds == p - 1
    assert r.method.startswith("node rings")


@pytest.mark.slow
def test_dgx2_16_nodes_at_the_bound() -> None:  # issue 24's row: 299 steps before, bound 255
    r = engine.synthesize(*_allgather("dgx2", 16))
    assert len(r.schedule.steps) == r.bounds.least_steps(True, 1) == 255


def test_mi250_4_nodes_fills_the_links_the_ring_leaves() -> None:
    # the link greedy needed 32 steps (every GPU pulling the other nodes' chunks through its own NIC);
    # the receive bound is 8 (63 chunks, 8 per round)
    topo, coll = _allgather("mi250", 4)
    ring_only = hierarchy.ring_allgather(topo, coll, 200, fill=False)
    filled = hierarchy.ring_allgather(topo, coll, 200, fill=True)
    assert ring_only is not None and filled is not None
    assert check_schedule(filled).verdict == "ok"
    assert len(filled.steps) <= 14 < len(ring_only.steps)


@pytest.mark.slow
def test_mi250_4_nodes_engine() -> None:  # issue 24's row: 32 steps before, then 14; bound 9 (holdings)
    r = engine.synthesize(*_allgather("mi250", 4))
    assert r.bounds.least_steps(True, 1) == 9
    assert len(r.schedule.steps) == 10 and r.method.startswith("every link full")


@pytest.mark.parametrize("nodes, steps", [(2, 6), (3, 8), (4, 10)])
def test_mi250_every_link_full_is_one_round_above_the_holdings_bound(nodes: int, steps: int) -> None:
    topo, coll = _allgather("mi250", nodes)
    s = matching.matched_allgather(topo, coll, 200)
    assert s is not None and check_schedule(s).verdict == "ok"
    bound = holdings_bound(topo, coll).value
    assert bound is not None and len(s.steps) == steps == bound + 1
    # the NICs carry a chunk every round (both ends are switch groups of one per round)
    remote = [sum(1 for x in st.sends if x.src // 16 != x.dst // 16) for st in s.steps[:-1]]
    assert min(remote) == 16 * nodes


def test_matching_is_not_for_one_node_or_non_allgather() -> None:
    topo, coll = _allgather("mi250", 1)
    assert matching.matched_allgather(topo, coll, 200) is None
    topo = library.topology("mi250", 2)
    assert matching.matched_allgather(topo, library.collective("alltoall", topo.ranks), 200) is None


def test_each_chunk_enters_a_node_once_through_the_nics() -> None:
    topo, coll = _allgather("dgx2", 4)
    s = hierarchy.ring_allgather(topo, coll, 200)
    assert s is not None and check_schedule(s).verdict == "ok"
    entries = {(x.chunk, x.dst // 16) for st in s.steps for x in st.sends if x.src // 16 != x.dst // 16}
    remote = [x for st in s.steps for x in st.sends if x.src // 16 != x.dst // 16]
    assert len(remote) == len(entries) == 4 * 3 * 16  # 48 foreign chunks per node, each in once


def test_node_ring_found_when_ranks_in_order_are_not_a_ring() -> None:
    # an MI250 node's GPU 1 has no link to GPU 2: the search finds another cycle over the node's links
    topo, _ = _allgather("mi250", 2)
    bw = {(l.src, l.dst): l.bandwidth for l in topo.links}
    members = list(range(16))
    assert (1, 2) not in bw
    ring = hierarchy._ring(members, bw)
    assert ring is not None and sorted(ring) == members
    assert all((x, ring[(i + 1) % 16]) in bw for i, x in enumerate(ring))


@pytest.mark.parametrize("topo, nodes", [("dgx2", 1), ("torus2d:4x4", 1)])
def test_one_node_is_not_its_case(topo: str, nodes: int) -> None:
    t, coll = _allgather(topo, nodes)
    assert node_of(t) is None
    assert hierarchy.ring_allgather(t, coll, 100) is None


def test_entry_bound_proves_ndv2_4_nodes_optimal_at_26() -> None:
    # one NIC per node: 24 chunks enter through GPU 1 at 1 per round, and GPUs 4, 6, 7 are 2 hops
    # from GPU 1; the receive and cut bounds say 24, the greedy's 26 is optimal
    topo, coll = _allgather("ndv2", 4)
    b = entry_bound(topo, coll)
    w = b.witness
    assert b.value == 26 and w["must_enter"] == 24 and w["capacity"] == 1 and w["entries"] == [8 * w["node"] + 1]
    assert w["hops"] == 2 and w["farthest"] in {8 * w["node"] + r for r in (4, 6, 7)}
    # re-check the witness from the topology: every link into the node lands on its entry rank
    inside = set(w["inside"])
    into = {(l.src, l.dst) for l in topo.links if l.src not in inside and l.dst in inside}
    assert {d for _, d in into} == set(w["entries"])
    r = engine.synthesize(topo, coll)
    assert r.bounds.least_steps(True, 1) == 26 == len(r.schedule.steps)


def test_entry_bound_does_not_apply_to_reductions_or_one_node() -> None:
    t = library.topology("ndv2", 4)
    assert entry_bound(t, library.collective("allreduce", t.ranks, None, 1)).value is None
    one = library.topology("ndv2", 1)
    assert entry_bound(one, library.collective("allgather", one.ranks, None, 1)).value is None
