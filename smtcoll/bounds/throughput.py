"""The physical time bound: every schedule's call with B bytes takes T(B) >= us_per_byte * B, proved.

Units are the runtime's: B is nBytes (as in `smtcoll/sweep/cost.py`, one chunk is B / A bytes with A the
addresses of the largest per-rank buffer), every link carries its own GB/s (links without one:
`gbps_per_unit` per bandwidth unit), a switch group its bandwidth times the per-unit speed of the links it
bounds; 1 GB/s = 1000 bytes per microsecond. Three families, the largest wins, each with an exact
certificate (`smtcoll.bounds.witness.recheck_throughput` recomputes it from the topology and collective):

- `cut`: a rank set S into which d addresses must enter (d B / A bytes) through links and switch groups of
  rate at most c: T >= d / (A c) per byte. Single ranks are per-rank ingress, complements egress; rank
  sets are all of them up to `EXHAUSTIVE_UP_TO` ranks, then nodes, balls and blocks.
- `transfers`: every schedule makes at least H address transfers, each leaving one rank and entering one:
  T >= H / (A min(sum of ingress rates, sum of egress rates, rate of all links between parts)). For a
  combining address whose N holders and needers coincide H = 2(N-1) (the one-way gossip bound: before the
  first rank holds the full sum every other holder sent, after it every other needer receives): the
  Patarasuk-Yuan 2(N-1)/N of the buffer through each rank of a uniform machine. For a non-combining chunk:
  the ranks lacking it, or the hops to the farthest, whichever is more.
- `lengths`: for collectives where every missing chunk goes to one rank (Alltoall, Scatter, Gather), the
  concurrent flow LP (HiGHS, `lp.concurrent_flow`) and its dual: link and group lengths w >= 0 give
  T >= sum(demand x shortest distance under w) / sum(capacity x w), true for any w (weak duality).

Capacity into S is bounded by charging each crossing link to one switch group that bounds it (or to
itself): every charge gives an upper bound, and the least of three fixed charges is taken.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, cast

import attrs

from smtcoll import collectives
from smtcoll.errors import ModelError
from smtcoll.model import Collective, Topology

EXHAUSTIVE_UP_TO = 16  # ranks: every rank subset is a candidate cut (2^16 columns of numpy arithmetic)
SCREENED = 8  # the best cuts by floating-point screening whose exact value is computed
DEFAULT_GBPS_PER_UNIT = 25.0



def exact(x: float | int) -> Fraction:
    """A decimal as written (0.7 is 7/10, not the nearest binary double)."""
    return Fraction(repr(float(x))) if isinstance(x, float) else Fraction(x)


def fraction_text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def addresses(coll: Collective) -> int:
    """Addresses in the largest per-rank buffer (input or output): B / this is one chunk's bytes (the sweep's
    cost model uses this one too)."""
    largest = 1
    for sets in (coll.pre_sets, coll.post_sets):
        for s in sets:
            largest = max(largest, len({coll.address[c] for c in s}))
    return largest


# --- capacities, exact ---------------------------------------------------------------------------

@attrs.frozen
class Rates:
    """Bytes per microsecond: per link, per switch group, and the links each group bounds."""

    link: tuple[Fraction, ...]
    group: tuple[Fraction, ...]
    members: tuple[tuple[int, ...], ...]

    @functools.cached_property
    def groups_of(self) -> tuple[tuple[int, ...], ...]:
        """Per link, the groups that bound it (in topology order; computed once: `cut_rate` asks per set)."""
        out: list[list[int]] = [[] for _ in self.link]
        for g, ms in enumerate(self.members):
            for e in ms:
                out[e].append(g)
        return tuple(tuple(x) for x in out)

    @functools.cached_property
    def scaled(self) -> tuple[int, tuple[int, ...], tuple[Fraction, ...]]:
        """(d, the links' rates times d, the groups' times d), d the links' common denominator: `cut_rate` sums
        integers, not Fractions (mi250 x 16: half a million Fraction additions, 3 of `synth`'s 12 CPU s)."""
        d = math.lcm(*(x.denominator for x in self.link)) if self.link else 1
        return d, tuple(int(x * d) for x in self.link), tuple(g * d for g in self.group)


def rates(topo: Topology, gbps_per_unit: float | Fraction = DEFAULT_GBPS_PER_UNIT) -> Rates:
    from smtcoll.bounds.lp import group_members

    unit = gbps_per_unit if isinstance(gbps_per_unit, Fraction) else exact(gbps_per_unit)
    link = tuple(exact(l.gbps) * 1000 if l.gbps else l.bandwidth * unit * 1000 for l in topo.links)
    members = tuple(tuple(ms) for ms in group_members(topo))
    group = tuple(g.bandwidth * max((link[e] / topo.links[e].bandwidth for e in ms), default=unit * 1000)
                  for g, ms in zip(topo.switches, members, strict=True))
    return Rates(link, group, members)


CHARGES = ("links", "first group", "last group", "widest group", "cover")


def cut_rate(topo: Topology, r: Rates, inside: Iterable[int], crossing: list[int] | None = None) -> Fraction:
    """An upper bound on the bytes per microsecond that can enter the rank set: the least over the
    charges in CHARGES of (links charged to themselves) + sum over groups of min(group rate, links
    charged to it). Any charge is an upper bound; "widest group" charges each link to its group that bounds
    the most crossing links, whatever the file order (a rank's in-port listed after the sources'
    out-ports, with a bridge group listed last: neither first nor last is the in-port). `crossing`: the
    indices of the links into the set, where the caller has them (one rank at a time: no scan of all links)."""
    if crossing is None:
        s = set(inside)
        crossing = [e for e, l in enumerate(topo.links) if l.dst in s and l.src not in s]
    groups_of = r.groups_of
    d, link, group = r.scaled  # sums of d x the rates, in integers; divided by d at the end
    width: dict[int, int] = {}
    for e in crossing:
        for g in groups_of[e]:
            width[g] = width.get(g, 0) + 1
    best: Fraction | None = None
    for charge in CHARGES:
        free = 0
        charged: dict[int, int] = {}
        if charge == "cover":
            total = _cover(crossing, groups_of, link, group) / d
            best = total if best is None or total < best else best
            continue
        for e in crossing:
            gs = groups_of[e]
            if charge == "links" or not gs:
                free += link[e]
                continue
            if charge == "first group":
                g = gs[0]
            elif charge == "last group":
                g = gs[-1]
            else:  # the widest; ties to the slower group, then file order (deterministic)
                g = min(gs, key=lambda x: (-width[x], r.group[x], x))
            charged[g] = charged.get(g, 0) + link[e]
        total = (free + sum((min(group[g], Fraction(v)) for g, v in charged.items()), Fraction(0))) / d
        best = total if best is None or total < best else best
    return best if best is not None else Fraction(0)


def _cover(crossing: list[int], groups_of: Sequence[Sequence[int]], link: Sequence[int],
           group: Sequence[Fraction]) -> Fraction:
    """The "cover" charge of `cut_rate`, in its integers: `entry.greedy_cover` of the crossing links (groups
    chosen by the least rate per rate of links they newly bound, while that beats the links' own). The fixed
    charges can miss the cover a cut needs: into a fat-tree node the widest group of a link from the other
    leaf is the leaf's uplinks, while the node's own NIC groups bound every link in (held-out fattree4x4:
    175 GB/s into a node, where its NICs take 100)."""
    from smtcoll.bounds.entry import greedy_cover

    bounds: dict[int, list[int]] = {}
    for e in crossing:
        for g in groups_of[e]:
            bounds.setdefault(g, []).append(e)
    scale = math.lcm(*(group[g].denominator for g in bounds)) if bounds else 1  # integer rates for the cover
    chosen = [(int(group[g] * scale), frozenset(bounds[g])) for g in sorted(bounds)]
    return Fraction(greedy_cover({e: link[e] * scale for e in crossing}, chosen), scale)


# --- certificates ----------------------------------------------------------------------------------

@attrs.frozen
class CutCertificate:
    """`must_enter` addresses (of `addresses` per buffer) must enter `inside` at rate at most `rate`."""

    inside: tuple[int, ...]
    must_enter: int
    addresses: int
    rate: Fraction

    kind = "cut"

    @property
    def us_per_byte(self) -> Fraction:
        return Fraction(self.must_enter, self.addresses) / self.rate

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.kind, "inside": list(self.inside), "must_enter": self.must_enter,
                "addresses": self.addresses, "rate_bytes_per_us": fraction_text(self.rate)}


@attrs.frozen
class TransfersCertificate:
    """At least `transfers` address transfers, through total ingress (or egress) rate `rate`."""

    transfers: int
    addresses: int
    rate: Fraction
    side: str  # "ingress", "egress" (sums of per-part rates) or "total" (the links between parts): the least
    parts: tuple[tuple[int, ...], ...] | None = None  # None: every rank is a part

    kind = "transfers"

    @property
    def us_per_byte(self) -> Fraction:
        return Fraction(self.transfers, self.addresses) / self.rate

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.kind, "transfers": self.transfers, "addresses": self.addresses,
                "rate_bytes_per_us": fraction_text(self.rate), "side": self.side,
                "parts": None if self.parts is None else [list(p) for p in self.parts]}


@attrs.frozen
class LengthsCertificate:
    """The flow LP's dual: lengths per link and per switch group; `demand_distance` is the sum of each
    demand (in buffers) times its shortest distance, `capacity_length` the sum of rate x length."""

    link_lengths: tuple[Fraction, ...]
    group_lengths: tuple[Fraction, ...]
    demand_distance: Fraction
    capacity_length: Fraction

    kind = "lengths"

    @property
    def us_per_byte(self) -> Fraction:
        return self.demand_distance / self.capacity_length if self.capacity_length else Fraction(0)

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.kind, "link_lengths": [fraction_text(x) for x in self.link_lengths],
                "group_lengths": [fraction_text(x) for x in self.group_lengths],
                "demand_distance": fraction_text(self.demand_distance),
                "capacity_length": fraction_text(self.capacity_length)}


Certificate = CutCertificate | TransfersCertificate | LengthsCertificate


@attrs.frozen
class TimeBound:
    """T(B) >= max(latency_us, us_per_byte * B) for every schedule of the collective on the topology.

    `us_per_byte` is exact and proved by `certificate`; `latency_us` = `steps` (the distance bound) x
    `alpha_us` (the smallest link alpha). Their sum is not claimed: a schedule can overlap them."""

    topology: str
    collective: str
    ranks: int
    gbps_per_unit: Fraction
    us_per_byte: Fraction
    steps: int
    alpha_us: Fraction
    certificate: Certificate | None
    witness: str

    @property
    def latency_us(self) -> Fraction:
        return self.steps * self.alpha_us

    @property
    def bus_factor(self) -> Fraction:
        factor = collectives.bus_factor(self.collective, self.ranks)  # nccl-tests' (the table of collectives)
        return Fraction(1) if factor is None else factor

    def at(self, size: int) -> Fraction:
        """The least time in microseconds of a call with `size` bytes."""
        return max(self.latency_us, self.us_per_byte * size)

    def algbw_gbps(self, size: int) -> Fraction | None:
        """The most algorithm bandwidth (size / time) any schedule reaches, GB/s; None: no bound (time 0)."""
        t = self.at(size)
        return Fraction(size) / t / 1000 if t > 0 else None

    def busbw_gbps(self, size: int) -> Fraction | None:
        """nccl-tests' bus bandwidth at `size` that no schedule beats, GB/s."""
        a = self.algbw_gbps(size)
        return None if a is None else a * self.bus_factor

    def to_json(self, size: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "topology": self.topology, "collective": self.collective, "ranks": self.ranks,
            "gbps_per_unit": fraction_text(self.gbps_per_unit), "us_per_byte": fraction_text(self.us_per_byte),
            "steps": self.steps, "alpha_us": fraction_text(self.alpha_us),
            "latency_us": fraction_text(self.latency_us), "bus_factor": fraction_text(self.bus_factor),
            "witness": self.witness, "certificate": None if self.certificate is None else self.certificate.to_json()}
        if self.us_per_byte:
            out["max_algbw_gbps"] = round(float(1 / self.us_per_byte / 1000), 6)
            out["max_busbw_gbps"] = round(float(self.bus_factor / self.us_per_byte / 1000), 6)
        if size is not None:
            bus = self.busbw_gbps(size)
            out["size"] = size
            out["time_us"] = round(float(self.at(size)), 6)
            out["busbw_gbps"] = None if bus is None else round(float(bus), 6)
        return out


# --- the bound -----------------------------------------------------------------------------------

def _candidate_cuts(topo: Topology) -> list[tuple[int, ...]]:
    p = topo.ranks
    if p <= EXHAUSTIVE_UP_TO:
        return [s for k in range(1, p) for s in itertools.combinations(range(p), k)]
    from smtcoll.bounds.cuts import candidate_cuts

    cuts = {tuple(sorted(s)) for s in candidate_cuts(topo)}
    # nodes and groups of nodes of a multi-node machine (ranks numbered by node): every block count up to
    # 16 that divides the ranks (3 nodes of a DGX-1 with two NICs each: no ball around a rank is a node)
    for m in range(2, 17):
        if p % m == 0:
            size = p // m
            for i in range(m):
                block = set(range(i * size, (i + 1) * size))
                cuts.add(tuple(sorted(block)))
                cuts.add(tuple(sorted(set(range(p)) - block)))
    return sorted(cuts, key=lambda s: (len(s), s))


def _screen_cuts(topo: Topology, coll: Collective, r: Rates, cuts: Sequence[tuple[int, ...]]) -> list[int]:
    """Indices of the most promising cuts, by floating-point estimate of enter / rate (numpy)."""
    import numpy as np

    from smtcoll.bounds.arrays import Arrays

    arr = Arrays(topo, coll)
    src = np.array([l.src for l in topo.links], dtype=np.int64)
    dst = np.array([l.dst for l in topo.links], dtype=np.int64)
    link = np.array([float(x) for x in r.link])
    gcap = np.array([float(x) for x in r.group])
    groups_of = r.groups_of
    first = np.array([gs[0] if gs else -1 for gs in groups_of], dtype=np.int64)
    last = np.array([gs[-1] if gs else -1 for gs in groups_of], dtype=np.int64)
    scores = np.zeros(len(cuts))
    block = 4096
    for lo in range(0, len(cuts), block):
        part = cuts[lo:lo + block]
        x = np.zeros((topo.ranks, len(part)), dtype=bool)
        for j, s in enumerate(part):
            x[list(s), j] = True
        enter = arr.enter_counts(x).astype(float)
        crossing = (x[dst] & ~x[src]).astype(float) * link[:, None]  # links x cuts
        cap = crossing.sum(axis=0)
        for assign in (first, last):
            if not len(gcap):
                break
            free = crossing[assign < 0].sum(axis=0)
            charged = np.zeros((len(gcap), len(part)))
            np.add.at(charged, assign[assign >= 0], crossing[assign >= 0])
            cap = np.minimum(cap, free + np.minimum(charged, gcap[:, None]).sum(axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            scores[lo:lo + len(part)] = np.where(enter > 0, enter / np.maximum(cap, 1e-300), 0.0)
    order = np.lexsort((np.arange(len(cuts)), -scores))
    return [int(j) for j in order[:SCREENED] if scores[j] > 0]


class Unreachable(Exception):
    """Some data can never arrive: no schedule exists (the time bound is then reported without a value)."""


def best_cut(topo: Topology, coll: Collective, r: Rates) -> CutCertificate | None:
    """The strongest cut found: candidates screened in floating point (which only chooses), then each
    chosen one computed exactly (which is what is claimed). Raises Unreachable when data must enter a set
    that no link enters."""
    from smtcoll.bounds.demand import must_enter

    cuts = _candidate_cuts(topo)
    a = addresses(coll)
    best: CutCertificate | None = None
    chosen = [cuts[j] for j in _screen_cuts(topo, coll, r, cuts)]
    if topo.ranks > EXHAUSTIVE_UP_TO:
        chosen += _forest_cuts(topo, coll) + _rooted_cuts(topo, coll, r)
    for inside in chosen:
        d = len(must_enter(coll, inside))
        rate = cut_rate(topo, r, inside)
        if not d:
            continue
        if not rate:
            raise Unreachable(f"no schedule exists: data must enter ranks {list(inside)} but no link enters them")
        cert = CutCertificate(inside, d, a, rate)
        if best is None or cert.us_per_byte > best.us_per_byte:
            best = cert
    return best


def _forest_cuts(topo: Topology, coll: Collective) -> list[tuple[int, ...]]:
    """For Allgather and ReduceScatter beyond the exhaustive range: the rank set of ForestColl's cut
    formula (`forest.throughput_bound`, max-flow and Dinkelbach's iteration), which is the best cut for
    them, and its complement. Only the set is taken: its bound is computed again here, exactly."""
    from smtcoll.bounds.forest import throughput_bound

    b = throughput_bound(topo, coll)
    side = b.witness.get("sending_side") if b.value is not None else None
    if not side or len(side) >= topo.ranks:
        return []
    inside = tuple(sorted(int(x) for x in side))
    return [inside, tuple(sorted(set(range(topo.ranks)) - set(inside)))]


def _rooted_cuts(topo: Topology, coll: Collective, r: Rates) -> list[tuple[int, ...]]:
    """For a rooted collective beyond the exhaustive range: per rank v, the minimum cut between the root
    and v on the flow network (Edmonds: for Broadcast the least of them is the tree-packing optimum).
    Only the rank sets are taken; their bounds are computed again, exactly."""
    if coll.root is None:
        return []
    from smtcoll.bounds.network import flow_network

    rate = {(l.src, l.dst): float(r.link[e]) for e, l in enumerate(topo.links)}
    net = flow_network(topo, lambda l: rate[(l.src, l.dst)],
                       lambda g: float(r.group[topo.switches.index(g)]))
    out: set[tuple[int, ...]] = set()
    for v in range(topo.ranks):
        if v == coll.root:
            continue
        for s, t in ((coll.root, v), (v, coll.root)):  # data from the root (Broadcast) or to it (Gather)
            inside = tuple(sorted(x for x in _sink_side(net, s, t) if isinstance(x, int)))
            if 0 < len(inside) < topo.ranks:
                out.add(inside)
    return sorted(out)


def _sink_side(net: Any, s: int, t: int) -> set[Any]:
    """The sink side of a minimum s-t cut, as networkx's `minimum_cut` gives it: the nodes that reach t in the
    residual network of a maximum flow (scipy's, in C, on capacities rounded to 1e-6: only
    the set is used, its bound is computed again exactly; networkx took 13 CPU s for the 142 cuts of a
    72-GPU switch)."""
    import numpy as np
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    nodes = list(net.nodes)
    index = {x: i for i, x in enumerate(nodes)}
    rows, cols, caps = [], [], []
    for a, b, data in net.edges(data=True):
        rows.append(index[a])
        cols.append(index[b])
        caps.append(round(float(data.get("capacity", 0)) * 1_000_000))
    n = len(nodes)
    m = csr_array((np.array(caps, dtype=np.int64), (np.array(rows), np.array(cols))), shape=(n, n))
    m.sum_duplicates()
    flow = maximum_flow(m, index[s], index[t]).flow
    residual: Any = csr_array(m - flow)  # flow is antisymmetric: reverse edges get the flow back as capacity
    residual.data = np.where(residual.data > 0, residual.data, 0)
    residual.eliminate_zeros()
    reach = breadth_first_order(residual.T.tocsr(), index[t], return_predecessors=False).tolist()
    return {nodes[i] for i in reach}


def partitions(topo: Topology) -> list[tuple[tuple[int, ...], ...] | None]:
    """Rank partitions the transfers bound tries: single ranks (None), and blocks of consecutive ranks
    (the nodes of a multi-node machine, numbered node by node, and groups of them): every block count
    from 2 to 64 that divides the ranks (3 nodes as well as 2 or 4: ndv2 x3's Allreduce needs 4/3 of the
    buffer through each node's NIC, not the 1 a cut proves)."""
    p = topo.ranks
    out: list[tuple[tuple[int, ...], ...] | None] = [None]
    for m in range(2, 65):
        if m < p and p % m == 0:
            size = p // m
            out.append(tuple(tuple(range(i * size, (i + 1) * size)) for i in range(m)))
    return out


def transfers_for(topo: Topology, coll: Collective, r: Rates,
                  parts: tuple[tuple[int, ...], ...] | None) -> TransfersCertificate | None:
    """The transfers bound for one partition (None: single ranks), exactly."""
    from smtcoll.bounds.demand import address_transfers

    h = address_transfers(coll, topo, parts)
    if not h:
        return None
    everyone = set(range(topo.ranks))
    sets = [set(p) for p in parts] if parts is not None else [{v} for v in range(topo.ranks)]
    ingress = sum((cut_rate(topo, r, s) for s in sets), Fraction(0))
    egress = sum((cut_rate(topo, r, everyone - s) for s in sets), Fraction(0))
    # every transfer also crosses one link between parts at a time, a switch group's rate counted once: a NIC
    # shared by several ranks is counted once for all of them, where each rank's own ingress counts it in full
    # (held-out dualplane8 x 2: four GPUs a NIC; 200 GB/s a GPU in the sum of ingresses, 162.5 in the total)
    rate, side = (ingress, "ingress") if ingress <= egress else (egress, "egress")
    if any(len(g.srcs) > 1 and len(g.dsts) > 1 for g in topo.switches):  # else the sums count every group once
        part = {v: i for i, s in enumerate(sets) for v in s}
        total = _total_rate(topo, r, [e for e, l in enumerate(topo.links) if part[l.src] != part[l.dst]])
        if total < rate:
            rate, side = total, "total"
    if not rate:
        return None
    return TransfersCertificate(h, addresses(coll), rate, side, parts)


def _total_rate(topo: Topology, r: Rates, links: list[int]) -> Fraction:
    """An upper bound on the bytes per microsecond that `links` carry at once: each rank's links that a group of
    it alone as sender bounds (its port) as one cut per rank, the other links (a NIC shared by several GPUs) as
    one more; or the same with receivers. `cut_rate` over all of them at once charges each link to one group,
    where the ports of both ends can leave no charge that counts a shared NIC once (its greedy cover, held-out
    sw2x3 x 2: out- and in-ports taken in turn, 1100 GB/s where the ports and the NICs give 700), and costs more
    (its cover over every NIC link of mi250 x 16: 10 CPU s)."""
    sides = []
    for end in ("srcs", "dsts"):
        alone = {g: next(iter(getattr(sw, end))) for g, sw in enumerate(topo.switches) if len(getattr(sw, end)) == 1}
        own: dict[int, list[int]] = {}
        rest = []
        for e in links:
            ranks = sorted({alone[g] for g in r.groups_of[e] if g in alone})
            if ranks:
                own.setdefault(ranks[0], []).append(e)
            else:
                rest.append(e)
        rate = cut_rate(topo, r, (), rest) if rest else Fraction(0)
        rate += sum((cut_rate(topo, r, (), es) for _, es in sorted(own.items())), Fraction(0))
        sides.append(rate)
    return min(sides)


def transfers_bound(topo: Topology, coll: Collective, r: Rates) -> TransfersCertificate | None:
    """The best transfers bound over `partitions` (combining collectives: between nodes, the one-way
    gossip count 2(k-1) over k nodes beats every cut on a ring of nodes)."""
    best: TransfersCertificate | None = None
    for parts in partitions(topo) if coll.is_combining else [None]:
        t = transfers_for(topo, coll, r, parts)
        if t is not None and (best is None or t.us_per_byte > best.us_per_byte):
            best = t
    return best


def lengths_bound(topo: Topology, coll: Collective, r: Rates, at_least: Fraction | None = None,
                  ) -> LengthsCertificate | None:
    """The flow LP's dual lengths; None where the LP proves nothing, or proves no more than `at_least` (us per
    byte another certificate proves): a shortest-path routing that meets it bounds the LP's optimum."""
    from smtcoll.bounds.lp import concurrent_flow, unicast_commodities

    a = addresses(coll)
    coms = unicast_commodities(coll, Fraction(1, a))
    if not coms:
        return None
    if at_least is not None:
        from smtcoll.bounds.routing import route_time

        routed = route_time(topo, coms, r.link, r.group)
        if routed is not None and routed <= at_least:  # the LP's optimum is at most the routing's time
            return None
    # only the dual lengths matter, and the certificate recomputes their bound exactly: the interior point
    # method (with crossover) gives the same bound, 4x faster on mi250 x 3 Alltoall (82,000 variables:
    # 3.1 s against 13.1 s CPU with the dual simplex; docs/benchmarks.md, issue 24 session 6)
    from smtcoll.bounds.symmetric_lp import symmetric_flow

    # one commodity per orbit of the machine's symmetries where it has them (mi250 x 3: 12x smaller)
    sol = symmetric_flow(topo, coms, r.link, r.group, method="highs-ipm")
    if sol is None:
        from smtcoll.bounds.sink_lp import sink_flow

        sol = sink_flow(topo, coms, r.link, r.group, method="highs-ipm")  # Gather: one commodity per sink
    if sol is None:
        sol = concurrent_flow(topo, coms, r.link, r.group, method="highs-ipm")
    if sol is None:
        return None
    return lengths_certificate(topo, coll, r, sol.link_lengths, sol.group_lengths)


def lengths_certificate(topo: Topology, coll: Collective, r: Rates, link_lengths: Sequence[Fraction],
                        group_lengths: Sequence[Fraction]) -> LengthsCertificate:
    """The bound that lengths prove, computed exactly (Dijkstra over fractions; also the re-check)."""
    import networkx as nx

    from smtcoll.bounds.lp import unicast_commodities

    if len(link_lengths) != len(topo.links) or len(group_lengths) != len(topo.switches):
        raise ModelError("certificate", f"expected {len(topo.links)} link and {len(topo.switches)} group lengths")
    if any(x < 0 for x in (*link_lengths, *group_lengths)):
        raise ModelError("certificate", "lengths must be >= 0")
    coms = unicast_commodities(coll, Fraction(1, addresses(coll))) or []
    length = list(link_lengths)
    for g, ms in enumerate(r.members):
        for e in ms:
            length[e] += group_lengths[g]
    graph: nx.DiGraph[int] = nx.DiGraph()
    graph.add_nodes_from(range(topo.ranks))
    for e, l in enumerate(topo.links):
        graph.add_edge(l.src, l.dst, w=length[e])
    demand_distance = Fraction(0)
    for com in coms:
        # the lengths are Fractions, so are the distances (the stub says float: it assumes float weights)
        dist = cast("dict[int, Fraction]", nx.multi_source_dijkstra_path_length(graph, set(com.sources), weight="w"))
        for v, d in sorted(com.demand.items()):
            if v not in dist:
                raise ModelError("collective", f"rank {v} cannot be reached")
            demand_distance += d * dist[v]
    capacity_length = (sum((c * w for c, w in zip(r.link, link_lengths, strict=True)), Fraction(0))
                       + sum((c * w for c, w in zip(r.group, group_lengths, strict=True)), Fraction(0)))
    return LengthsCertificate(tuple(link_lengths), tuple(group_lengths), demand_distance, capacity_length)


def _explain(cert: Certificate, topo: Topology, coll: Collective) -> str:
    if isinstance(cert, CutCertificate):
        inside = list(cert.inside)
        what = (f"rank {inside[0]}" if len(inside) == 1 else
                f"all ranks but {sorted(set(range(topo.ranks)) - set(inside))[0]}" if len(inside) == topo.ranks - 1
                else f"ranks {_short(inside)}")
        return (f"cut: {cert.must_enter}/{cert.addresses} of the buffer must enter {what}, at most "
                f"{float(cert.rate / 1000):g} GB/s in")
    if isinstance(cert, TransfersCertificate):
        where = "in all" if cert.parts is None else f"between {len(cert.parts)} blocks of {len(cert.parts[0])} ranks"
        through = "all the links at once" if cert.side == "total" else f"total {cert.side}"
        return (f"transfers: every schedule sends {cert.transfers}/{cert.addresses} buffers {where}, through "
                f"{float(cert.rate / 1000):g} GB/s of {through}")
    return (f"flow LP dual: {float(cert.demand_distance):g} buffer-lengths of demand over "
            f"{float(cert.capacity_length):g} of capacity-length")


def _short(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}..{ranks[-1]}"
    return ",".join(map(str, ranks))


def time_bound(topo: Topology, coll: Collective, gbps_per_unit: float = DEFAULT_GBPS_PER_UNIT,
               alpha_us: float | None = None, *, lp: bool = True) -> TimeBound:
    """The strongest proved T(B) >= us_per_byte * B (cuts, transfers, flow LP dual) and the latency part
    (distance steps x the least link alpha; links without alpha count `alpha_us`, else 0). Cached per
    (topology, collective, speeds): the sweep asks for the same machine at every size and node count.
    `lp=False` leaves the flow LP out (cuts and transfers only: still a bound, maybe a weaker one)."""
    return _time_bound(topo, coll, gbps_per_unit, alpha_us, lp)


@functools.lru_cache(maxsize=64)
def _time_bound(topo: Topology, coll: Collective, gbps_per_unit: float, alpha_us: float | None,
                lp: bool) -> TimeBound:
    if topo.ranks != coll.ranks:
        raise ModelError("collective", f"has {coll.ranks} ranks but the topology has {topo.ranks}")
    from smtcoll.bounds.distance import distance_bound

    r = rates(topo, gbps_per_unit)
    cands: list[Certificate] = []
    try:
        cut = best_cut(topo, coll, r)
    except Unreachable as e:  # no schedule at all: nothing to bound (us_per_byte 0 is trivially true)
        return TimeBound(topo.name, coll.name, coll.ranks, exact(gbps_per_unit), Fraction(0), 0, Fraction(0), None,
                         str(e))
    for c in (cut, transfers_bound(topo, coll, r)):
        if c is not None:
            cands.append(c)
    if lp:
        best = max((c.us_per_byte for c in cands), default=None)
        lengths = lengths_bound(topo, coll, r, best)
        if lengths is not None:
            cands.append(lengths)
    # the largest bound; ties to the simplest certificate (cut, then transfers, then lengths)
    cert = max(cands, key=lambda c: c.us_per_byte, default=None)
    steps_b = distance_bound(topo, coll)
    steps = int(steps_b.value) if steps_b.value is not None else 0
    alphas = [exact(l.alpha_us) if l.alpha_us is not None else
              (exact(alpha_us) if alpha_us is not None else Fraction(0)) for l in topo.links]
    alpha = min(alphas, default=Fraction(0))
    witness = _explain(cert, topo, coll) if cert is not None else "nothing must move"
    return TimeBound(topo.name, coll.name, coll.ranks, exact(gbps_per_unit),
                     cert.us_per_byte if cert is not None else Fraction(0), steps, alpha, cert, witness)
