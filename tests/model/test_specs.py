"""Spec files: built-ins as files, lossless round trips, and clear errors for bad files."""


import pytest
from helpers.paths import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from smtcoll import library, specs
from smtcoll.errors import InputError
from smtcoll.model import Topology

SPECS = ROOT / "specs"

BUILTIN_TOPOLOGIES = ["dgx1", "ndv2", "dgx2", "a100", "mi250", "amd8", "ring:8", "line:5", "star:6",
                      "fully-connected:4", "hub-and-spoke:6", "torus2d:4x4", "mesh2d:3x5", "torus3d:2x3x4",
                      "hypercube:4"]
MULTI_NODE = [("ndv2", 2), ("dgx2", 2), ("a100", 2), ("mi250", 2), ("ndv2", 3)]


@pytest.mark.parametrize("name", sorted(p.stem for p in (SPECS / "collectives").glob("*.toml")))
@pytest.mark.parametrize("ranks", [3, 8])
def test_collective_files_match_builtins(name, ranks):
    root = 0 if library.COLLECTIVES[name].rooted else None
    path = SPECS / "collectives" / f"{name}.toml"
    assert specs.load_collective(path, ranks, root, 2) == library.collective(name, ranks, root, 2)


@pytest.mark.parametrize("stem, builtin, nodes", [
    ("dgx1", "dgx1", 1), ("ndv2", "ndv2", 1), ("dgx2", "dgx2", 1), ("a100", "a100", 1), ("mi250", "mi250", 1),
    ("amd8", "amd8", 1), ("ring", "ring:8", 1), ("line", "line:8", 1), ("star", "star:8", 1),
    ("fully-connected", "fully-connected:8", 1), ("hub-and-spoke", "hub-and-spoke:8", 1),
    ("torus2d", "torus2d:4x4", 1), ("mesh2d", "mesh2d:4x4", 1), ("torus3d", "torus3d:2x2x2", 1),
    ("hypercube", "hypercube:3", 1), ("ndv2-2nodes", "ndv2", 2), ("dgx2-2nodes", "dgx2", 2),
    ("a100-2nodes", "a100", 2),
])
def test_topology_files_match_builtins(stem, builtin, nodes):
    loaded = specs.load_topology(SPECS / "topologies" / f"{stem}.toml")
    expected = library.topology(builtin, nodes)
    assert (loaded.ranks, loaded.links, loaded.switches) == (expected.ranks, expected.links, expected.switches)
    if nodes == 1:
        assert loaded.nics == expected.nics


def test_every_spec_file_is_covered():
    files = {p.stem for p in (SPECS / "topologies").glob("*.toml")} - {"custom-example"}
    assert len(files) == 18


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BUILTIN_TOPOLOGIES + MULTI_NODE))
def test_topology_round_trip(tmp_path_factory, item):
    name, nodes = item if isinstance(item, tuple) else (item, 1)
    topo = library.topology(name, nodes)
    path = tmp_path_factory.mktemp("t") / "t.toml"
    specs.save_topology(topo, path)
    assert specs.load_topology(path) == topo
    assert specs.dumps_topology(specs.load_topology(path)) == path.read_text()  # byte for byte


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(library.COLLECTIVES)), st.integers(1, 9), st.integers(1, 3), st.data())
def test_collective_round_trip(tmp_path_factory, name, ranks, chunks, data):
    root = data.draw(st.integers(0, ranks - 1)) if library.COLLECTIVES[name].rooted else None
    coll = library.collective(name, ranks, root, chunks)
    path = tmp_path_factory.mktemp("c") / "c.toml"
    specs.save_collective(coll, path)
    assert specs.load_collective(path) == coll


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(1, 4)), max_size=20))))
def test_random_topology_round_trip(tmp_path_factory, case):
    n, raw = case
    links = {(s, d): bw for s, d, bw in raw if s != d}
    text = f'[topology]\nname = "r"\nranks = {n}\n' + ("links = []\n" if not links else "")
    for (s, d), bw in links.items():
        text += f"[[topology.links]]\nsrc = {s}\ndst = {d}\nbandwidth = {bw}\n"
    path = tmp_path_factory.mktemp("r") / "r.toml"
    path.write_text(text)
    topo = specs.load_topology(path)
    specs.save_topology(topo, path)
    assert specs.load_topology(path) == topo and len(topo.links) == len(links)


BAD_TOPOLOGIES = [
    ('[topology]\nranks = 8\nlinks = [{src = 0, dst = 1}, {src = 1, dst = 9}]\n',
     r"links\[1\]\.dst: = 9: rank out of range \(topology has 8 ranks\)", 3),
    ('[topology]\nranks = 2\n[[topology.links]]\nsrc = 0\ndst = 1\n[[topology.links]]\nsrc = 1\ndst = 7\n',
     r"links\[1\]\.dst: = 7: rank out of range", 6),
    ('[topology]\nranks = 2\nlinks = []\ncolour = "red"\n', r"colour: unknown key", 4),
    ('[topology]\nranks = 2\nlinks = [{src = 0, dst = 1, speed = 3}]\n', r"links\[0\]\.speed: unknown key", 3),
    ('[topology]\nranks = 2\nlinks = [{src = 0, dst = 0}]\n', r"links\[0\]: self link", 3),
    ('[topology]\nranks = 2\nlinks = [{src = 0, dst = 1, bandwidth = 0}]\n', r"bandwidth must be at least 1", 3),
    ('[topology]\nranks = "eight"\nlinks = []\n', r"ranks: expected an integer, got a string", 2),
    ('[topology]\nadjacency = [[0, 1], [1]]\n', r"adjacency\[1\]: expected an array of 2 integers", 2),
    ('[topology]\ngenerator = "torus2d:4"\n', r"generator: torus2d takes 2 size parameter", 2),
    ('[topology]\nlinks = []\nadjacency = [[0]]\nranks = 1\n', r"exactly one of links, adjacency", None),
    ('[topology]\ngenerator = "ring:4"\nnodes = 2\n', r"no NIC model", None),
    ('[topology]\nranks = 2\nlinks = []\nswitches = [{srcs = [0], dsts = [5]}]\n', r"switches\[0\]\.dsts\[0\]", 4),
    ('[topology\nranks = 2\n', r":1: column \d+: not valid TOML", None),
    ("ranks = 2\n", r"no \[topology\] table", None),
    ('[topology]\nranks = 2\nlinks = []\n[extra]\n', r"extra: unknown top-level key", 4),
    ("[topology]\nranks = 2\nlinks = " + "[" * 2000 + "]" * 2000 + "\n", r"(not valid TOML|expected)", None),
]


@pytest.mark.parametrize("text, message, line", BAD_TOPOLOGIES)
def test_bad_topology_files(tmp_path, cli, text, message, line):
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        specs.load_topology(path)
    if line is not None:
        assert e.value.line == line
    result = cli("show", "topology", str(path))
    assert result.returncode == 2 and result.stderr.startswith(f"error: {path}")
    assert "Traceback" not in result.stderr + result.stdout


BAD_COLLECTIVES = [
    ('[collective]\nchunks = "ranks"\npre = "__import__(\'os\').system(\'echo hacked\')"\npost = "true"\n'
     'address = "chunk"\n', r"pre: bad expression .*Call is not allowed", 3),
    ('[collective]\nchunks = "ranks"\npre = "rank = chunk"\npost = "true"\naddress = "chunk"\n',
     r"pre: bad expression", 3),
    ('[collective]\nchunks = "ranks"\npre = "rank == chunk"\npost = "true"\naddress = "chunk"\nroot_rank = 1\n',
     r"root_rank: unknown key", 6),
    ('[collective]\nchunks = "ranks"\npre = "rank == 99"\npost = "true"\naddress = "chunk"\n',
     r"post: rank 0 must end with chunk 0, which no rank holds", 4),
    ('[collective]\nchunks = "ranks // 0"\npre = "true"\npost = "true"\naddress = "chunk"\n',
     r"chunks: division by zero", 2),
    ('[collective]\nchunks = "ranks"\npre = "true"\npost = "true"\n', r"address: missing", None),
    ('[collective]\nchunks = "ranks"\npre = "rank == chunk"\npost = "true"\naddress = "open(\'f\')"\n',
     r"address: bad expression", 5),
    ('[collective]\nranks = 4\nchunks = 1\npre = [[0, 0]]\npost = [[5, 0]]\naddress = [0]\n',
     r"post: rank 5 out of range", 5),
    ("\x00\x01binary", r"not valid TOML", None),
]


@pytest.mark.parametrize("text, message, line", BAD_COLLECTIVES)
def test_bad_collective_files(tmp_path, cli, text, message, line):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        specs.load_collective(path, 4)
    if line is not None:
        assert e.value.line == line
    result = cli("show", "collective", str(path), "--ranks", "4")
    assert result.returncode == 2 and result.stderr.startswith(f"error: {path}")
    assert "Traceback" not in result.stderr and "hacked" not in result.stdout


def test_non_utf8_and_missing_files(tmp_path, cli):
    bad = tmp_path / "b.toml"
    bad.write_bytes(b"\xff\xfe[topology]")
    assert "not UTF-8" in cli("show", "topology", str(bad)).stderr
    result = cli("show", "topology", str(tmp_path / "missing.toml"))
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_custom_example_is_a_usable_template():
    topo = specs.load_topology(SPECS / "topologies" / "custom-example.toml")
    assert topo.ranks == 4 and topo.bandwidth(0, 1) == 2 and topo.link(3, 0).gbps == 5.0
    assert topo.link(1, 2).gbps == 10.0 and topo.switches[0].name == "uplink"


def test_node_file_composition(tmp_path):
    (tmp_path / "node.toml").write_text(
        '[topology]\nname = "pair"\nranks = 2\nlinks = [{src = 0, dst = 1}, {src = 1, dst = 0}]\n'
        'nics = [{senders = [0, 1], receivers = [0, 1], gbps = 10.0}]\n')
    (tmp_path / "cluster.toml").write_text('[topology]\nnode = "node.toml"\nnodes = 3\n')
    topo = specs.load_topology(tmp_path / "cluster.toml")
    assert topo.ranks == 6 and topo.has_link(0, 3) and topo.has_link(5, 1) and topo.link(0, 3).gbps == 10.0
    # each NIC's outgoing and incoming traffic is bounded by one switch group
    assert any(g.srcs == (0, 1) and g.bandwidth == 1 for g in topo.switches)


def test_a_named_node_file_composition_keeps_its_nodes(tmp_path):
    """A cluster file with its own name is still several nodes to the constructions and the cost model (they
    were one node: a rail-optimised 4 x DGX H100 file got 0.35 of the Allgather bound, as 4 nodes 0.99)."""
    from smtcoll.sweep.cost import Model, machine
    from smtcoll.synth.constructions.rings import nodes_of

    (tmp_path / "node.toml").write_text(
        '[topology]\nname = "pair"\nranks = 2\nlinks = [{src = 0, dst = 1}, {src = 1, dst = 0}]\n'
        'nics = [{senders = [0], receivers = [0], gbps = 10.0}, {senders = [1], receivers = [1], rail = 1}]\n')
    (tmp_path / "cluster.toml").write_text('[topology]\nname = "mycluster"\nnode = "node.toml"\nnodes = 2\n')
    topo = specs.load_topology(tmp_path / "cluster.toml")
    assert topo.name == "mycluster-2nodes" and topo.named_nodes == 2
    assert nodes_of(topo) == [0, 0, 1, 1]
    kinds = machine(topo, 1, Model.load()).kind
    assert kinds[(0, 2)] == "net" and kinds[(0, 1)] != "net"


def test_a_file_written_link_by_link_is_the_nodes_its_nic_groups_tell_apart(tmp_path):
    """Two pairs of ranks joined by links that `nic...` groups bound: two nodes to the constructions and the
    cost model (held-out fattree4x4, 4 nodes written link by link, was one node: its NIC links were timed as
    NVLink hops and no construction crossed by the rails). Nodes that are not consecutive ranks stay one."""
    from smtcoll.sweep.cost import Model, machine
    from smtcoll.synth.constructions.rings import nodes_of

    def write(pairs: tuple[tuple[int, int], ...]) -> Topology:
        inside = [(a, b) for a, b in pairs] + [(b, a) for a, b in pairs]
        across = [(u, v) for u in range(4) for v in range(4) if u != v and (u, v) not in inside]
        links = ", ".join(f"{{src = {u}, dst = {v}, bandwidth = {4 if (u, v) in inside else 1}}}"
                          for u, v in sorted(inside + across))
        groups = "".join(f'[[topology.switches]]\nsrcs = [{u}]\ndsts = {[v for a, v in across if a == u]}'
                         f'\nbandwidth = 1\nname = "nicout{u}"\n' for u in range(4))
        (tmp_path / "m.toml").write_text(f'[topology]\nname = "m"\nranks = 4\nlinks = [{links}]\n{groups}')
        return specs.load_topology(tmp_path / "m.toml")

    topo = write(((0, 1), (2, 3)))
    assert topo.named_nodes == 1 and topo.node_count == 2 and nodes_of(topo) == [0, 0, 1, 1]
    kinds = machine(topo, 1, Model.load()).kind
    assert kinds[(0, 2)] == "net" and kinds[(0, 1)] != "net"
    assert write(((0, 2), (1, 3))).node_count == 1  # nodes {0, 2} and {1, 3}: not blocks of consecutive ranks
    ring = specs.resolve_topology("ring:4")
    assert ring.node_count == 1  # no NIC groups


def test_huge_spec_file_is_refused_before_parsing(tmp_path, monkeypatch):
    path = tmp_path / "big.toml"
    path.write_text("[topology]\n" + "# padding\n" * 2000)
    monkeypatch.setattr(specs, "MAX_SPEC_BYTES", 1000)
    with pytest.raises(InputError, match="spec files are limited to 1000"):
        specs.load_topology(path)
