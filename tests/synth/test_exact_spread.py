"""The spread (synth/exact/spread.py): two rounds put every contribution at one GPU of each group, then recursive
doubling in the groups across the NICs."""

from __future__ import annotations

import pytest

from smtcoll import library, specs
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Nic, Topology
from smtcoll.synth.door import synthesize
from smtcoll.synth.exact.spread import _labels, spread_allreduce


def _rings(nodes: int) -> tuple[Topology, Collective]:
    """Nodes of 4 GPUs on a ring, a NIC per GPU reaching every GPU of the other nodes, one-address Allreduce."""
    ring = library.generate("ring", [4])
    nics = [Nic([k], [k], 1, 0) for k in range(4)]
    topo = Topology("ring4nic", 4, ring.links, ring.switches, nics).compose(nodes)
    return topo, library.collective("allreduce", topo.ranks)


@pytest.mark.parametrize("nodes", [6, 8])
def test_rings_of_four_in_four_steps(nodes: int) -> None:
    # a contribution reaches 4 + deg(h) + deg(x) GPUs in two rounds: the ring less a perfect matching (6 nodes),
    # the whole ring (8); then 2 rounds of doubling in groups of 4
    topo, coll = _rings(nodes)
    s, spent = spread_allreduce(topo, coll, 99)
    assert s is not None and len(s.steps) == 4 and spent > 0
    assert check_schedule(s).verdict == "ok"
    assert spread_allreduce(topo, coll, 99)[0] == s  # deterministic
    assert spread_allreduce(topo, coll, 4)[0] is None  # nothing with fewer steps than asked below


@pytest.mark.parametrize(("base", "dims", "nodes", "steps"), [("hypercube", [3], 10, 5), ("torus2d", [4, 4], 12, 6)])
def test_other_nodes_with_a_nic_per_gpu(base: str, dims: list[int], nodes: int, steps: int) -> None:
    # a 3-cube node (degree 3: 4 + 3 + 3 = 10) and a 4 x 4 torus node (degree 4: 12), a NIC per GPU on one rail
    node = library.generate(base, dims)
    nics = [Nic([k], [k], 1, 0) for k in range(node.ranks)]
    topo = Topology(f"{base}nic", node.ranks, node.links, node.switches, nics).compose(nodes)
    s, _ = spread_allreduce(topo, library.collective("allreduce", topo.ranks), 99)
    assert s is not None and len(s.steps) == steps and check_schedule(s).verdict == "ok"


def test_mi250_eleven_nodes_in_six_steps() -> None:
    topo = specs.resolve_topology("mi250", 11)
    s, _ = spread_allreduce(topo, library.collective("allreduce", topo.ranks), 99)
    assert s is not None and len(s.steps) == 6 and check_schedule(s).verdict == "ok"


def test_where_it_does_not_apply() -> None:
    topo, _ = _rings(7)  # 7 = 4 + deg + deg has no subgraph of the ring tried: degrees 2 and 1 unpaired
    assert spread_allreduce(topo, library.collective("allreduce", topo.ranks), 99)[0] is None
    topo, _ = _rings(6)
    assert spread_allreduce(topo, library.collective("allgather", topo.ranks), 99)[0] is None
    two = specs.resolve_topology("mi250", 2)  # fewer than 3 nodes
    assert spread_allreduce(two, library.collective("allreduce", two.ranks), 99)[0] is None
    a100 = specs.resolve_topology("a100", 3)  # the node is a switch, no point-to-point links
    assert spread_allreduce(a100, library.collective("allreduce", a100.ranks), 99)[0] is None


def test_the_cube_labels_keep_neighbours_apart() -> None:
    labels = _labels(4, [0, 0, 1, 1])
    assert labels is not None and sorted(labels) == [0, 1, 2, 3]
    assert bin(labels[0] ^ labels[1]).count("1") == 2 and bin(labels[2] ^ labels[3]).count("1") == 2
    assert _labels(4, [0, 0, 0, 1]) is None  # three of one colour on a square: two are neighbours


@pytest.mark.slow  # about 4 CPU s: the engine (7 steps), its bounds, then the spread
def test_synth_takes_it_on_mi250_ten_nodes() -> None:
    topo = specs.resolve_topology("mi250", 10)
    r = synthesize(topo, library.collective("allreduce", topo.ranks))
    assert r.schedule is not None and len(r.schedule.steps) == 6
    assert r.method.startswith("exact: spread")
    assert check_schedule(r.schedule).verdict == "ok"
