"""Small machines written in the tests (issue 24, session 13): the shapes of the held-out ones, not their files."""

from __future__ import annotations

from pathlib import Path

from smtcoll import library, specs
from smtcoll.model import Collective, Link, SwitchGroup, Topology


def fat_tree(nodes: int, gpus: int, inside: int = 8) -> Topology:
    """Nodes of `gpus` GPUs (`inside` chunks a round per pair inside), each GPU with its own NIC (1 a round in,
    1 out) to every GPU of the other nodes: a rank's own NIC is the narrow way into it."""
    p = nodes * gpus
    links = [Link(a, b, inside if a // gpus == b // gpus else 1) for a in range(p) for b in range(p) if a != b]
    groups = []
    for v in range(p):
        away = [r for r in range(p) if r // gpus != v // gpus]
        groups += [SwitchGroup([v], away, 1, f"nicout{v}"), SwitchGroup(away, [v], 1, f"nicin{v}")]
    return Topology(f"fat{nodes}x{gpus}", p, links, groups)


def pairs_on_a_switch(gpus: int, nodes: int) -> Topology:
    """NVL-style nodes: `gpus` GPUs on one switch (a port of 1 a round each way), a NIC shared by each GPU pair
    (rail i), composed into `nodes` nodes."""
    nics = [{"senders": [2 * i, 2 * i + 1], "receivers": [2 * i, 2 * i + 1], "bandwidth": 1, "rail": i}
            for i in range(gpus // 2)]
    return specs.topology_from_dict({"name": "pairs", "generator": f"hub-and-spoke:{gpus}", "nics": nics}
                                    ).compose(nodes)


def torus_2x2xn(n: int) -> Topology:
    """A 2 x 2 x n torus (rank = x + 2y + 4z): x and y links of 1 chunk a round, the rings along z of 2."""
    links = []
    for r in range(4 * n):
        x, y, z = r % 2, (r // 2) % 2, r // 4
        links += [Link(r, (1 - x) + 2 * y + 4 * z, 1), Link(r, x + 2 * (1 - y) + 4 * z, 1)]
        links += [Link(r, x + 2 * y + 4 * ((z + d) % n), 2) for d in (1, n - 1)]
    return Topology(f"torus2x2x{n}", 4 * n, links)


def quad(nics: list[list[int]]) -> str:
    """A spec file: 4 GPUs, every pair linked, PCIe-like ports of one chunk a round each way; `nics` shared
    by the GPUs listed, all on one rail (the shape of the held-out pcie4slow and shared2nic8)."""
    links = "".join(f"    {{ src = {u}, dst = {v}, bandwidth = 1 }},\n" for u in range(4) for v in range(4) if u != v)
    ports = "".join(
        f"[[topology.switches]]\nsrcs = [{u}]\ndsts = {[v for v in range(4) if v != u]}\nbandwidth = 1\n"
        f"[[topology.switches]]\nsrcs = {[v for v in range(4) if v != u]}\ndsts = [{u}]\nbandwidth = 1\n"
        for u in range(4))
    nic = "".join(f"[[topology.nics]]\nsenders = {g}\nreceivers = {g}\nbandwidth = 1\nrail = 0\n" for g in nics)
    return f'[topology]\nname = "quad"\nranks = 4\nlinks = [\n{links}]\n{ports}{nic}'


def quad_allreduce(tmp_path: Path, nics: list[list[int]], nodes: int) -> tuple[Topology, Collective]:
    """`quad(nics)` composed into `nodes` nodes, and its one-address Allreduce."""
    path = tmp_path / "quad.toml"
    path.write_text(quad(nics))
    topo = specs.load_topology(path, nodes)
    return topo, library.collective("allreduce", topo.ranks)


def rails_on_a_switch(gpus: int, nodes: int) -> Topology:
    """DGX H100-style nodes: `gpus` GPUs on one switch (450 GB/s ports), each GPU with its own 50 GB/s NIC on
    rail i (the GPU of the same index in every other node), composed into `nodes` nodes."""
    nics = [{"senders": [i], "receivers": [i], "bandwidth": 1, "rail": i, "alpha_us": 2.0, "gbps": 50.0}
            for i in range(gpus)]
    return specs.topology_from_dict({"name": "rails", "generator": f"hub-and-spoke:{gpus}", "alpha_us": 0.5,
                                     "gbps": 450.0, "nics": nics}).compose(nodes)
