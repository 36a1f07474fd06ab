"""`rail_alltoall`: Alltoall across nodes of rail-connected switches, every byte through one NIC, on rails that
keep the NICs from waiting for each other (docs/synth.md). Small machines of the DGX H100's shape
(`helpers.machines.rails_on_a_switch`: 4 GPUs a node on a 450 GB/s switch, a 50 GB/s NIC per GPU)."""

from __future__ import annotations

from collections import Counter

import pytest
from helpers.machines import rails_on_a_switch

from smtcoll import library
from smtcoll.bounds.throughput import time_bound
from smtcoll.check.schedule import check_schedule
from smtcoll.errors import ModelError
from smtcoll.model import Schedule
from smtcoll.sweep.cost import Model, schedule_time
from smtcoll.sweep.tasks import model_bound
from smtcoll.synth.constructions import build, constructions
from smtcoll.synth.constructions.rail_alltoall import rail_alltoalls

SIZE = 1 << 28


def _crossing(s: Schedule, per_node: int) -> list[tuple[int, int]]:
    return [(x.src, x.dst) for st in s.steps for x in st.sends if x.src // per_node != x.dst // per_node]


def test_rail_classes_on_three_nodes_reach_the_bound() -> None:
    """3 nodes of 4 GPUs: rails 0-1 carry node a -> a + 1 only, rails 2-3 a -> a + 2, so every NIC sends to one
    NIC and receives from one, each carrying the NIC bound's share (8 blocks each way). At 256 MiB and 2
    instances within 3% of the sweep's bound (0.983); NCCL's direct sends 0.72 and every block through its
    sender's own rail 0.79 (the run pairs three NICs badly: module docstring)."""
    from smtcoll.synth.constructions.rail_alltoall import _Layout, _own

    topo = rails_on_a_switch(4, 3)
    coll = library.collective("alltoall", topo.ranks)
    (classes,) = rail_alltoalls(topo, coll)
    own = _own(topo, coll, _Layout(topo))
    assert check_schedule(classes).verdict == "ok" and check_schedule(own).verdict == "ok"
    c = classes.collective.chunk_factor
    crossing = _crossing(classes, 4)
    assert all(len({d for s, d in crossing if s == r}) == 1 for r in range(topo.ranks))  # one NIC link a rank
    assert {(s // 4, d // 4) for s, d in crossing if s % 4 < 2} == {(0, 1), (1, 2), (2, 0)}
    per_nic = Counter(s for s, _ in crossing)
    assert set(per_nic.values()) == {2 * 4 * c} and set(Counter(d for _, d in crossing).values()) == {2 * 4 * c}
    bound = model_bound(topo, coll, 3, Model.load())(SIZE)
    timed = {name: schedule_time(s, "Simple", 2, SIZE, nodes=3)
             for name, s in (("classes", classes), ("own", own), ("direct", build("direct", topo, coll)))}
    times = {name: t for name, t in timed.items() if t is not None}
    assert len(times) == 3
    assert bound / times["classes"] >= 0.97
    assert times["classes"] < 0.85 * times["own"] and times["classes"] < 0.8 * times["direct"]
    # the bound is the NIC cut: (n - 1) p blocks of SIZE / (n p) through a 50 GB/s NIC
    tb = time_bound(topo, coll)
    assert abs(tb.us_per_byte * SIZE - 2 * 4 * SIZE / 12 / 50_000) < 1e-6 * tb.us_per_byte * SIZE


def test_own_rails_on_four_nodes() -> None:
    """4 nodes: 3 offsets do not divide 4 rails, so only the own rails (every block through its sender's NIC,
    then NVLink): 0.988 of the bound at 2 instances, NCCL's direct sends 0.85."""
    topo = rails_on_a_switch(4, 4)
    coll = library.collective("alltoall", topo.ranks)
    (own,) = rail_alltoalls(topo, coll)
    assert build("rail_alltoall", topo, coll).steps == own.steps
    crossing = _crossing(own, 4)
    assert all(s % 4 == d % 4 for s, d in crossing)  # on the sender's rail
    assert len(crossing) == 16 * 3 * 4 * own.collective.chunk_factor  # every block crosses once
    bound = model_bound(topo, coll, 4, Model.load())(SIZE)
    t = schedule_time(own, "Simple", 2, SIZE, nodes=4)
    direct = schedule_time(build("direct", topo, coll), "Simple", 2, SIZE, nodes=4)
    assert t is not None and direct is not None
    assert bound / t >= 0.98 and t < 0.9 * direct


def test_rail_alltoall_is_a_sweep_candidate_and_deterministic() -> None:
    topo = rails_on_a_switch(4, 3)
    coll = library.collective("alltoall", topo.ranks)
    offered = [c for c in constructions(topo, coll) if c.name == "rail_alltoall"]
    assert [c.schedule.steps for c in offered] == [s.steps for s in rail_alltoalls(rails_on_a_switch(4, 3), coll)]
    assert len(offered) == 1 and offered[0].nccl is None


@pytest.mark.parametrize(("name", "nodes", "kind", "why"), [
    ("a100", 2, "allgather", "is an Alltoall"),
    ("a100", 1, "alltoall", "one node"),
    ("dgx2", 2, "alltoall", "rail"),  # its NICs join odd GPUs to even ones: no rails
    ("ndv2", 2, "alltoall", "every pair"),  # not every pair of a node linked
])
def test_rail_alltoall_is_refused_where_it_does_not_apply(name: str, nodes: int, kind: str, why: str) -> None:
    topo = library.topology(name, nodes)
    with pytest.raises(ModelError, match=f"rail_alltoall does not apply.*{why}"):
        build("rail_alltoall", topo, library.collective(kind, topo.ranks))
