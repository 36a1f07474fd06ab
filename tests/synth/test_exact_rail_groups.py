"""The rail groups (synth/exact/rail_groups.py): switch nodes whose GPUs share NICs in pairs; a small search on a
few NICs' GPUs of every node, then intervals of blocks inside the node."""

from __future__ import annotations

import pytest

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Nic, Topology
from smtcoll.synth.door import synthesize
from smtcoll.synth.exact.rail_groups import _interval_rounds, rail_groups


def _pairs(gpus: int, nodes: int, per_nic: int = 2) -> tuple[Topology, Collective]:
    """Nodes of `gpus` GPUs on a switch (a port of one value a round each way), a NIC per `per_nic` GPUs, NIC k
    of every node on rail k (nvl36's shape at 36 GPUs), and the one-address Allreduce."""
    hub = library.generate("hub-and-spoke", [gpus])
    nics = [Nic(list(range(k, k + per_nic)), list(range(k, k + per_nic)), 1, k // per_nic)
            for k in range(0, gpus, per_nic)]
    topo = Topology(f"pairs{gpus}", gpus, hub.links, hub.switches, nics).compose(nodes)
    return topo, library.collective("allreduce", topo.ranks)


def test_thirty_six_gpus_three_nodes_in_seven_steps() -> None:
    # groups of 2 NICs: one GPU per NIC holds its group's 12 after 3 rounds, then 9 blocks: 8 by intervals, 1
    topo, coll = _pairs(36, 3)
    s = rail_groups(topo, coll, 99)
    assert s is not None and len(s.steps) == 7 and check_schedule(s).verdict == "ok"
    assert rail_groups(topo, coll, 7) is None  # nothing with fewer steps than asked below


def test_twelve_gpus_three_nodes() -> None:
    topo, coll = _pairs(12, 3)
    s = rail_groups(topo, coll, 99)
    assert s is not None and len(s.steps) == 5 and check_schedule(s).verdict == "ok"
    assert s == rail_groups(topo, coll, 99)  # deterministic


def test_the_intervals_and_the_shape() -> None:
    assert [_interval_rounds(m) for m in (2, 3, 4, 5, 6, 7, 9, 12, 18)] == [None, 2, None, 3, 3, None, 4, 4, 5]
    topo, coll = _pairs(12, 3, per_nic=1)  # a NIC per GPU: no passive to copy into
    assert rail_groups(topo, coll, 99) is None
    topo, _ = _pairs(12, 3)
    assert rail_groups(topo, library.collective("allgather", topo.ranks), 99) is None


@pytest.mark.slow  # about 5 CPU s: the engine, then the search and the whole schedule checked
def test_synth_takes_it_where_the_symmetric_search_is_too_large() -> None:
    # the default synth (no method): the engine's lanes 9, the machine's own search beyond its size limit
    topo, coll = _pairs(36, 3)
    r = synthesize(topo, coll)
    assert r.schedule is not None and len(r.schedule.steps) == 7 and r.method.startswith("exact: rail groups")
    assert check_schedule(r.schedule).verdict == "ok"
