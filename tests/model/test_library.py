import pytest

from smtcoll import library
from smtcoll.errors import ModelError


def degrees(topo):
    return {sum(topo.bandwidth(r, d) for d in topo.out_neighbors(r)) for r in range(topo.ranks)}


def test_dgx1():
    t = library.topology("dgx1")
    assert (t.ranks, t.diameter, degrees(t)) == (8, 2, {6})
    assert all(t.bandwidth(a, b) == t.bandwidth(b, a) for a in range(8) for b in range(8))


@pytest.mark.parametrize("name, ranks, degree, diameter", [
    ("torus2d:4x4", 16, {4}, 4), ("mesh2d:4x4", 16, {2, 3, 4}, 6), ("torus3d:4x4x4", 64, {6}, 6),
    ("ring:8", 8, {2}, 4), ("line:8", 8, {1, 2}, 7), ("star:8", 8, {1, 7}, 2), ("hypercube:4", 16, {4}, 4),
    ("fully-connected:5", 5, {4}, 1), ("hub-and-spoke:8", 8, {7}, 1), ("mi250", 16, {7}, None),
    ("amd8", 8, {37, 38, 39, 40, 41, 42}, 1),
])
def test_generated(name, ranks, degree, diameter):
    t = library.topology(name)
    assert t.ranks == ranks and degrees(t) <= degree | {min(degree)}
    if diameter is not None:
        assert t.diameter == diameter


def test_switch_models():
    dgx2 = library.topology("dgx2")
    assert dgx2.ranks == 16 and len(dgx2.switches) == 32
    out0 = next(g for g in dgx2.switches if g.srcs == (0,))
    assert out0.bandwidth == 1 and len(out0.dsts) == 15


def test_multi_node_ndv2():
    t = library.topology("ndv2", nodes=2)
    inter = [(l.src, l.dst) for l in t.links if l.src // 8 != l.dst // 8]
    assert t.ranks == 16 and sorted(inter) == [(0, 9), (8, 1)]  # GPU 0 of each node sends to GPU 1 of the other
    assert all(l.gbps == 12.5 and l.alpha_us == 2.6 for l in t.links if l.src // 8 != l.dst // 8)


def test_multi_node_nics_share_bandwidth():
    t = library.topology("ndv2", nodes=3)
    groups = [g for g in t.switches if g.name.startswith("nic0-out")]
    assert len(groups) == 3 and groups[0].srcs == (0,) and groups[0].dsts == (9, 17)
    dgx2 = library.topology("dgx2", nodes=2)
    assert dgx2.ranks == 32 and dgx2.has_link(1, 16) and not dgx2.has_link(0, 17)


def test_unknown_and_unsized_names():
    with pytest.raises(ModelError, match="unknown topology"):
        library.topology("dgx3")
    with pytest.raises(ModelError, match="needs a size"):
        library.topology("ring")
    with pytest.raises(ModelError, match="no NIC model"):
        library.topology("ring:4", nodes=2)
    with pytest.raises(ModelError, match="more than 4096 ranks"):
        library.topology("ring:100000")
