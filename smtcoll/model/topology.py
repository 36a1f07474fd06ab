"""Topology: ranks, directed links with bandwidth, switch groups and optional α-β timing."""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from smtcoll.errors import ModelError

if TYPE_CHECKING:
    import networkx as nx


def _positive_or_none(where: str, value: float | None) -> None:
    if value is not None and not (isinstance(value, int | float) and value > 0):
        raise ModelError(where, f"must be a positive number, got {value!r}")


def _int(where: str, value: object, low: int, high: int | None = None, what: str = "") -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ModelError(where, f"expected an integer, got {value!r}")
    if value < low or (high is not None and value >= high):
        raise ModelError(where, f"= {value}: {what or 'out of range'}")
    return value


def _ints(items: Iterable[int]) -> tuple[int, ...]:
    return tuple(items)


@attrs.frozen
class Link:
    """A directed link carrying `bandwidth` chunks per round; optional timing for the α-β model."""

    src: int
    dst: int
    bandwidth: int = 1
    alpha_us: float | None = None
    gbps: float | None = None  # GB/s (gigabytes per second)


@attrs.frozen
class Nic:
    """A node's NIC, for composing multi-node topologies: local `senders` send through it, traffic
    arriving through it lands on local `receivers`; NICs reach the NICs of other nodes on the same rail."""

    senders: tuple[int, ...] = attrs.field(converter=_ints)
    receivers: tuple[int, ...] = attrs.field(converter=_ints)
    bandwidth: int = 1
    rail: int = 0
    alpha_us: float | None = None
    gbps: float | None = None


@attrs.frozen
class SwitchGroup:
    """Bounds the total chunks sent from any rank of `srcs` to any rank of `dsts` per round."""

    srcs: tuple[int, ...] = attrs.field(converter=_ints)
    dsts: tuple[int, ...] = attrs.field(converter=_ints)
    bandwidth: int = 1
    name: str = ""


# Typed converters (a plain `converter=tuple` loses the element type for the type checker).
def _links(items: Iterable[Link]) -> tuple[Link, ...]:
    return tuple(items)


def _switches(items: Iterable[SwitchGroup]) -> tuple[SwitchGroup, ...]:
    return tuple(items)


def _nics(items: Iterable[Nic]) -> tuple[Nic, ...]:
    return tuple(items)


@attrs.frozen
class Topology:
    """Ranks `0..ranks-1`, directed links and switch groups. Validates itself on construction."""

    name: str
    ranks: int
    links: tuple[Link, ...] = attrs.field(converter=_links)
    switches: tuple[SwitchGroup, ...] = attrs.field(default=(), converter=_switches)
    nics: tuple[Nic, ...] = attrs.field(default=(), converter=_nics)

    def __attrs_post_init__(self) -> None:
        _int("ranks", self.ranks, 1, what="a topology needs at least one rank")
        seen: dict[tuple[int, int], int] = {}
        in_range = f"rank out of range (topology has {self.ranks} ranks)"
        for i, link in enumerate(self.links):
            w = f"links[{i}]"
            if not isinstance(link, Link):
                raise ModelError(w, f"expected a Link, got {type(link).__name__}")
            _int(f"{w}.src", link.src, 0, self.ranks, in_range)
            _int(f"{w}.dst", link.dst, 0, self.ranks, in_range)
            if link.src == link.dst:
                raise ModelError(w, f"self link {link.src} -> {link.dst}")
            _int(f"{w}.bandwidth", link.bandwidth, 1, what="bandwidth must be at least 1")
            _positive_or_none(f"{w}.alpha_us", link.alpha_us) if link.alpha_us != 0 else None
            _positive_or_none(f"{w}.gbps", link.gbps)
            key = (link.src, link.dst)
            if key in seen:
                raise ModelError(w, f"duplicate link {link.src} -> {link.dst} (also links[{seen[key]}]); "
                                    "give parallel links as one link with a larger bandwidth")
            seen[key] = i
        for i, group in enumerate(self.switches):
            w = f"switches[{i}]"
            if not isinstance(group, SwitchGroup):
                raise ModelError(w, f"expected a SwitchGroup, got {type(group).__name__}")
            for field in ("srcs", "dsts"):
                members = getattr(group, field)
                if not members:
                    raise ModelError(f"{w}.{field}", "must not be empty")
                for j, r in enumerate(members):
                    _int(f"{w}.{field}[{j}]", r, 0, self.ranks, in_range)
                if len(set(members)) != len(members):
                    raise ModelError(f"{w}.{field}", "lists a rank twice")
            _int(f"{w}.bandwidth", group.bandwidth, 1, what="bandwidth must be at least 1")
        for i, nic in enumerate(self.nics):
            w = f"nics[{i}]"
            if not isinstance(nic, Nic):
                raise ModelError(w, f"expected a Nic, got {type(nic).__name__}")
            for field in ("senders", "receivers"):
                members = getattr(nic, field)
                if not members:
                    raise ModelError(f"{w}.{field}", "must not be empty")
                for j, r in enumerate(members):
                    _int(f"{w}.{field}[{j}]", r, 0, self.ranks, in_range)
            _int(f"{w}.bandwidth", nic.bandwidth, 1, what="bandwidth must be at least 1")
            _int(f"{w}.rail", nic.rail, 0, what="rail must be >= 0")
            _positive_or_none(f"{w}.alpha_us", nic.alpha_us)
            _positive_or_none(f"{w}.gbps", nic.gbps)

    # --- views -------------------------------------------------------------------------------
    @functools.cached_property
    def _bw(self) -> dict[tuple[int, int], int]:
        return {(link.src, link.dst): link.bandwidth for link in self.links}

    def bandwidth(self, src: int, dst: int) -> int:
        """Chunks per round on the link src -> dst; 0 when there is no link."""
        return self._bw.get((src, dst), 0)

    def has_link(self, src: int, dst: int) -> bool:
        return (src, dst) in self._bw

    def link(self, src: int, dst: int) -> Link | None:
        for link in self.links:
            if link.src == src and link.dst == dst:
                return link
        return None

    def graph(self) -> nx.DiGraph[int]:
        """A networkx view: one edge per link with its attributes (bandwidth, alpha_us, gbps)."""
        import networkx as nx  # imported here: it costs 0.1 s of start-up for commands that never need it

        g: nx.DiGraph[int] = nx.DiGraph(name=self.name)
        g.add_nodes_from(range(self.ranks))
        for link in self.links:
            g.add_edge(link.src, link.dst, bandwidth=link.bandwidth, alpha_us=link.alpha_us, gbps=link.gbps)
        return g

    def out_neighbors(self, rank: int) -> list[int]:
        return sorted(d for (s, d) in self._bw if s == rank)

    def in_neighbors(self, rank: int) -> list[int]:
        return sorted(s for (s, d) in self._bw if d == rank)

    @functools.cached_property
    def distances(self) -> dict[int, dict[int, int]]:
        """Hop distances `distances[src][dst]` (missing when dst is unreachable), by breadth-first search
        (the same as networkx's all_pairs_shortest_path_length, without importing networkx at start-up)."""
        out_of: dict[int, list[int]] = {r: [] for r in range(self.ranks)}
        for s, d in sorted(self._bw):
            out_of[s].append(d)
        result = {}
        for src in range(self.ranks):
            dist, queue = {src: 0}, deque([src])
            while queue:
                u = queue.popleft()
                for v in out_of[u]:
                    if v not in dist:
                        dist[v] = dist[u] + 1
                        queue.append(v)
            result[src] = dist
        return result

    @property
    def diameter(self) -> int | None:
        """Longest shortest path in hops; None if some rank cannot reach another."""
        if any(len(d) < self.ranks for d in self.distances.values()):
            return None
        return max(max(d.values()) for d in self.distances.values())

    def switches_of(self, src: int, dst: int) -> list[int]:
        """Indices of the switch groups that bound traffic src -> dst, in order."""
        on_link = self._groups_of_link.get((src, dst))
        if on_link is not None:
            return list(on_link)
        return [i for i, dsts in self._groups_from.get(src, ()) if dst in dsts]

    @functools.cached_property
    def _groups_of_link(self) -> dict[tuple[int, int], tuple[int, ...]]:
        # per link its groups, in one pass over the groups: asked once per link and step by the schedulers
        # (mi250 x 16: a rank is a source of 241 groups; 125,000 scans of them took 5.8 of 13 CPU s)
        linked = {(l.src, l.dst) for l in self.links}
        out: dict[tuple[int, int], list[int]] = {link: [] for link in linked}
        for i, g in enumerate(self.switches):
            dsts = tuple(dict.fromkeys(g.dsts))
            for u in dict.fromkeys(g.srcs):
                for v in dsts:
                    if (u, v) in linked:
                        out[(u, v)].append(i)
        return {link: tuple(groups) for link, groups in out.items()}

    @functools.cached_property
    def _groups_from(self) -> dict[int, list[tuple[int, frozenset[int]]]]:
        # per source rank its groups and their destinations as sets: a lookup instead of a scan of every
        # group's tuples (768 groups on dgx2 x 16, asked for each of its links)
        out: dict[int, list[tuple[int, frozenset[int]]]] = {}
        for i, g in enumerate(self.switches):
            dsts = frozenset(g.dsts)
            for u in dict.fromkeys(g.srcs):
                out.setdefault(u, []).append((i, dsts))
        return out

    @property
    def named_nodes(self) -> int:
        """The node count `compose` writes into the name (`NAME-Nnodes`, then `-reversed` for a dual's reversed
        machine; a topology file with `node` and `nodes` keeps it after its own name), 1 for any other name or
        a count that does not divide the ranks. Node i holds ranks i*P .. i*P + P - 1."""
        m = re.search(r"-(\d+)nodes(-reversed)?$", self.name)
        count = int(m.group(1)) if m else 1
        return count if count >= 1 and self.ranks % count == 0 else 1

    @functools.cached_property
    def nic_parts(self) -> tuple[int, ...] | None:
        """Each rank's part: the components that the links outside the NIC groups (switch groups named
        `nic...`) join, numbered by their least rank; None without NIC groups or where that is one part."""
        nic = [g for g in self.switches if g.name.startswith("nic")]
        if not nic:
            return None
        through = {(u, v) for g in nic for u in g.srcs for v in g.dsts}
        part = list(range(self.ranks))  # union-find

        def root(x: int) -> int:
            while part[x] != x:
                part[x] = part[part[x]]
                x = part[x]
            return x

        for lk in self.links:
            if (lk.src, lk.dst) not in through:
                a, b = root(lk.src), root(lk.dst)
                part[max(a, b)] = min(a, b)
        roots = sorted({root(r) for r in range(self.ranks)})
        if len(roots) < 2:
            return None
        index = {r: i for i, r in enumerate(roots)}
        return tuple(index[root(r)] for r in range(self.ranks))

    @functools.cached_property
    def node_count(self) -> int:
        """The nodes of a machine: `named_nodes` where the name gives them; else, for a file written link by
        link, its `nic_parts` where they are blocks of as many consecutive ranks; 1 otherwise. Node i holds
        ranks i*P .. i*P + P - 1."""
        if self.named_nodes > 1:
            return self.named_nodes
        parts = self.nic_parts
        if parts is None:
            return 1
        n = max(parts) + 1
        p = self.ranks // n
        return n if all(parts[r] == r // p for r in range(self.ranks)) and n * p == self.ranks else 1

    def reversed(self) -> Topology:
        """Every link and switch group turned around (for the duals of combining collectives)."""
        links = sorted((attrs.evolve(l, src=l.dst, dst=l.src) for l in self.links), key=lambda l: (l.src, l.dst))
        groups = [attrs.evolve(g, srcs=g.dsts, dsts=g.srcs) for g in self.switches]
        return Topology(f"{self.name}-reversed", self.ranks, links, groups)

    def compose(self, nodes: int) -> Topology:
        """`nodes` copies of this node topology joined through its NICs.

        Node i's rank r becomes i*P + r. For every ordered pair of nodes and every pair of NICs on the
        same rail, each sender of the first NIC gets a link to each receiver of the second. Switch groups
        bound each NIC's total outgoing and incoming traffic by its bandwidth."""
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            raise ModelError("nodes", f"must be an integer >= 1, got {nodes!r}")
        if nodes == 1:
            return self
        if not self.nics:
            raise ModelError("nodes", f"topology {self.name!r} has no NIC model, so it cannot be composed "
                                      "into several nodes")
        p = self.ranks
        links: dict[tuple[int, int], Link] = {}
        groups: list[SwitchGroup] = []
        for i in range(nodes):
            for l in self.links:
                links[(i * p + l.src, i * p + l.dst)] = attrs.evolve(l, src=i * p + l.src, dst=i * p + l.dst)
            for g in self.switches:
                groups.append(SwitchGroup([i * p + r for r in g.srcs], [i * p + r for r in g.dsts], g.bandwidth,
                                          f"{g.name}@node{i}" if g.name else ""))
        out_pairs: dict[tuple[int, int], set[tuple[int, int]]] = {}
        in_pairs: dict[tuple[int, int], set[tuple[int, int]]] = {}
        for i in range(nodes):
            for j in range(nodes):
                if i == j:
                    continue
                for a, na in enumerate(self.nics):
                    for b, nb in enumerate(self.nics):
                        if na.rail != nb.rail:
                            continue
                        bw = min(na.bandwidth, nb.bandwidth)
                        gbps = min((x for x in (na.gbps, nb.gbps) if x is not None), default=None)
                        alpha = max((x for x in (na.alpha_us, nb.alpha_us) if x is not None), default=None)
                        for s in na.senders:
                            for t in nb.receivers:
                                key = (i * p + s, j * p + t)
                                if key not in links or links[key].bandwidth < bw:
                                    links[key] = Link(key[0], key[1], bw, alpha, gbps)
                                out_pairs.setdefault((i, a), set()).add(key)
                                in_pairs.setdefault((j, b), set()).add(key)
        for kind, pairs in (("out", out_pairs), ("in", in_pairs)):
            for (node, nic), keys in sorted(pairs.items()):
                if len(keys) > 1:
                    srcs = sorted({s for s, _ in keys})
                    dsts = sorted({d for _, d in keys})
                    groups.append(SwitchGroup(srcs, dsts, self.nics[nic].bandwidth, f"nic{nic}-{kind}@node{node}"))
        ordered = [links[k] for k in sorted(links)]
        return Topology(f"{self.name}-{nodes}nodes", p * nodes, ordered, groups)
