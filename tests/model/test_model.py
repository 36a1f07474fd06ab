import pytest

from smtcoll import library
from smtcoll.errors import ModelError
from smtcoll.model import Collective, Instance, Link, Schedule, Send, Step, SwitchGroup, Topology


def test_topology_validates_links():
    with pytest.raises(ModelError, match=r"links\[1\].dst: = 9: rank out of range \(topology has 8 ranks\)"):
        Topology("t", 8, [Link(0, 1), Link(1, 9)])
    with pytest.raises(ModelError, match="self link"):
        Topology("t", 2, [Link(1, 1)])
    with pytest.raises(ModelError, match="bandwidth must be at least 1"):
        Topology("t", 2, [Link(0, 1, 0)])
    with pytest.raises(ModelError, match="duplicate link 0 -> 1"):
        Topology("t", 2, [Link(0, 1), Link(0, 1, 2)])
    with pytest.raises(ModelError, match=r"switches\[0\].srcs\[0\]"):
        Topology("t", 2, [Link(0, 1)], [SwitchGroup([5], [1], 1)])


def test_networkx_view_has_link_attributes():
    g = library.topology("dgx1").graph()
    assert g.number_of_nodes() == 8 and g.number_of_edges() == 32
    assert g.edges[0, 1]["bandwidth"] == 2 and g.edges[0, 1]["gbps"] == 50.0 and g.edges[0, 1]["alpha_us"] == 0.7


def test_collective_validates():
    with pytest.raises(ModelError, match="no rank holds at the start"):
        Collective("c", 2, 2, [(0, 0)], [(1, 1)], [0, 1])
    with pytest.raises(ModelError, match="rank 2 out of range"):
        Collective("c", 2, 1, [(2, 0)], [], [0])
    with pytest.raises(ModelError, match="2 entries for 1 chunks"):
        Collective("c", 2, 1, [(0, 0)], [], [0, 0])


def test_instance_rounds_at_least_steps():
    with pytest.raises(ModelError, match="rounds must be >= steps"):
        Instance(3, 2)
    assert Instance(3, 7, 6).rounds_per_chunk == pytest.approx(7 / 6)


def test_schedule_checks_ranks_and_rounds():
    topo, coll = library.topology("ring:4"), library.collective("allgather", 4)
    with pytest.raises(ModelError, match="rank out of range"):
        Schedule(topo, coll, [Step(1, [Send(0, 0, 4)])])
    with pytest.raises(ModelError, match=r"steps\[0\].rounds"):
        Schedule(topo, coll, [Step(0, [])])
    with pytest.raises(ModelError, match="has 5 ranks but the topology has 4"):
        Schedule(topo, library.collective("allgather", 5), [])


def test_chunk_multiplier_splits_chunks_and_addresses():
    c = library.collective("allreduce", 4, chunks=3)
    assert c.chunks == 12 and c.addresses == (0, 1, 2) and c.chunk_factor == 3 and c.is_combining
    assert c.contributions[1] == (1, 4, 7, 10)
    ag = library.collective("allgather", 4, chunks=2)
    assert ag.pre_sets[1] == {2, 3} and not ag.is_combining


@pytest.mark.parametrize("name, ranks, chunks, combining", [
    ("broadcast", 8, 1, False), ("reduce", 8, 8, True), ("scatter", 8, 8, False), ("gather", 8, 8, False),
    ("allgather", 8, 8, False), ("alltoall", 8, 64, False), ("reducescatter", 8, 64, True),
    ("allreduce", 8, 8, True),
])
def test_builtin_collectives(name, ranks, chunks, combining):
    c = library.collective(name, ranks, root=0 if library.COLLECTIVES[name].rooted else None)
    assert (c.chunks, c.is_combining) == (chunks, combining)


def test_alltoall_and_reducescatter_semantics():
    a2a = library.collective("alltoall", 4)
    assert (1, 1 * 4 + 2) in a2a.pre and (2, 1 * 4 + 2) in a2a.post
    rs = library.collective("reducescatter", 4)
    assert rs.post_sets[2] == {2, 6, 10, 14} and {rs.address[c] for c in rs.post_sets[2]} == {2}


def test_root_rules():
    assert library.collective("broadcast", 4, root=3).pre == ((3, 0),)
    with pytest.raises(ModelError, match="takes no root"):
        library.collective("allgather", 4, root=1)
    with pytest.raises(ModelError, match="root"):
        library.collective("gather", 4, root=4)
