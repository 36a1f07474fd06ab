"""Built-in topologies (generators and named machines) and collectives.

Names: `ring:N`, `line:N`, `star:N`, `fully-connected:N`, `hub-and-spoke:N`, `torus2d:AxB`, `mesh2d:AxB`,
`torus3d:AxBxC`, `hypercube:D`, and the machines `dgx1`, `ndv2`, `dgx2`, `a100`, `mi250`, `amd8`.
Link data and NIC models follow `docs/topologies.md`. Collectives are the rows of `smtcoll/collectives.py`,
defined by the same expressions a spec file uses, so `specs/collectives/*.toml` and the table agree.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Sequence

import attrs

from smtcoll import collectives, expr
from smtcoll.errors import ModelError
from smtcoll.model import Collective, Link, Nic, SwitchGroup, Topology
from smtcoll.text import count

MAX_RANKS = 4096
MAX_LINKS = 1 << 18  # generated or composed links (building a Topology costs ~40 us per link)

# --- topology generators -------------------------------------------------------------------------

GENERATORS = {
    "ring": "ring:N, a bidirectional ring of N ranks",
    "line": "line:N, a bidirectional line (chain) of N ranks",
    "star": "star:N, rank 0 linked both ways to N-1 leaves",
    "fully-connected": "fully-connected:N, a link between every ordered pair",
    "hub-and-spoke": "hub-and-spoke:N, every pair through a switch: each rank sends one and receives one "
                     "chunk per round",
    "torus2d": "torus2d:AxB, a 2D torus (wrap-around grid)",
    "mesh2d": "mesh2d:AxB, a 2D mesh (grid)",
    "torus3d": "torus3d:AxBxC, a 3D torus",
    "hypercube": "hypercube:D, 2^D ranks, linked when their ids differ in one bit",
}

# DGX-1 / NDv2 NVLink counts per pair (the published hybrid cube-mesh).
DGX1_NVLINKS = [
    [0, 2, 1, 1, 2, 0, 0, 0],
    [2, 0, 1, 2, 0, 1, 0, 0],
    [1, 1, 0, 2, 0, 0, 2, 0],
    [1, 2, 2, 0, 0, 0, 0, 1],
    [2, 0, 0, 0, 0, 2, 1, 1],
    [0, 1, 0, 0, 2, 0, 1, 2],
    [0, 0, 2, 0, 1, 1, 0, 2],
    [0, 0, 0, 1, 1, 2, 2, 0],
]
MI250_XGMI = [
    [0, 4, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
    [4, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0],
    [0, 0, 0, 4, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0],
    [0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0],
    [2, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 1, 0, 0, 4, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 1, 0, 1, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 2, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 2, 0, 0, 0],
    [0, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0],
    [0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 1, 0],
    [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 2],
    [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4, 1, 0],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 4, 0, 1, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 4],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 4, 0],
]
AMD8_WEIGHTS = [
    [0, 5, 6, 6, 5, 6, 5, 5],
    [5, 0, 5, 5, 6, 5, 6, 6],
    [6, 5, 0, 6, 5, 6, 5, 5],
    [6, 5, 6, 0, 5, 6, 5, 5],
    [5, 6, 5, 5, 0, 5, 6, 6],
    [6, 5, 6, 6, 5, 0, 5, 5],
    [5, 6, 5, 5, 6, 5, 0, 6],
    [5, 6, 5, 5, 6, 5, 6, 0],
]

MACHINES = {
    "dgx1": "NVIDIA DGX-1: 8 V100, NVLink hybrid cube-mesh (bandwidth = NVLink count, 25 GB/s each)",
    "ndv2": "Azure NDv2: a DGX-1 node plus one 100 Gb/s InfiniBand NIC (GPU 0 sends, GPU 1 receives)",
    "dgx2": "NVIDIA DGX-2: 16 V100 on NVSwitch (one chunk in and out per GPU per round), 8 NICs",
    "a100": "DGX A100 / Azure NDv4: 8 A100 on NVSwitch (300 GB/s per GPU), 8 NICs on 2 rails",
    "mi250": "AMD MI250: 16 GCDs on xGMI (bandwidth = link multiplicity, 50 GB/s each), a NIC per GCD",
    "amd8": "AMD 8 x MI50 (SCCL's AMD8): fully connected with weights 5 or 6",
}


def adjacency_links(matrix: list[list[int]], alpha_us: float | None = None,
                    gbps_per_unit: float | None = None) -> list[Link]:
    """Links from `matrix[src][dst]` = bandwidth (0 = no link)."""
    return [
        Link(s, d, bw, alpha_us, None if gbps_per_unit is None else gbps_per_unit * bw)
        for s, row in enumerate(matrix)
        for d, bw in enumerate(row)
        if bw
    ]


def _from_pairs(name: str, ranks: int, pairs: list[tuple[int, int]], switches: Sequence[SwitchGroup] = (),
                alpha_us: float | None = None, gbps: float | None = None) -> Topology:
    """Directed pairs (repeats add bandwidth, as parallel links) into a topology."""
    bw: dict[tuple[int, int], int] = {}
    for s, d in pairs:
        if s != d:
            bw[(s, d)] = bw.get((s, d), 0) + 1
    links = [Link(s, d, b, alpha_us, None if gbps is None else gbps * b) for (s, d), b in sorted(bw.items())]
    return Topology(name, ranks, links, switches)


def _both(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [p for s, d in pairs for p in ((s, d), (d, s))]


def _grid(dims: list[int], wrap: bool) -> list[tuple[int, int]]:
    pairs = []
    for coord in itertools.product(*[range(n) for n in dims]):
        me = _index(coord, dims)
        for axis, n in enumerate(dims):
            if n < 2 or (not wrap and coord[axis] == n - 1):
                continue
            if wrap and n == 2 and coord[axis] == 1:
                continue  # the pair is already linked from coordinate 0
            nxt = list(coord)
            nxt[axis] = (coord[axis] + 1) % n
            pairs.append((me, _index(nxt, dims)))
    return _both(pairs)


def _index(coord: tuple[int, ...] | list[int], dims: list[int]) -> int:
    i = 0
    for c, n in zip(coord, dims, strict=True):
        i = i * n + c
    return i


# TACOS's direct-connect defaults: 50 GiB/s and 0.5 us per link per direction.
GRID_GBPS = 50 * 1.073741824
GRID_ALPHA_US = 0.5


def generate(kind: str, params: list[int]) -> Topology:
    """Build a generated topology; `params` are the numbers after the colon."""
    want = {"torus2d": 2, "mesh2d": 2, "torus3d": 3}.get(kind, 1)
    if len(params) != want:
        raise ModelError("topology", f"{kind} takes {count(want, 'size parameter')}: {GENERATORS[kind].split(',')[0]}")
    if kind == "hypercube":
        if not 1 <= params[0] <= 12:
            raise ModelError("topology", f"hypercube dimension must be between 1 and 12, got {params[0]}")
        n = 2 ** params[0]
    else:
        n = 1
        for p in params:
            if p < 1:
                raise ModelError("topology", f"{kind} sizes must be >= 1, got {p}")
            n *= p
    if n < 2 or n > MAX_RANKS:
        raise ModelError("topology", f"{kind} needs between 2 and {MAX_RANKS} ranks, got {n}")
    if kind in ("fully-connected", "hub-and-spoke") and n * (n - 1) > MAX_LINKS:
        raise ModelError("topology", f"{kind}:{n} has {n * (n - 1)} links, more than {MAX_LINKS}")
    label = f"{kind}:" + "x".join(map(str, params))
    if kind == "ring":
        return _from_pairs(label, n, _both([(i, (i + 1) % n) for i in range(n if n > 2 else 1)]))
    if kind == "line":
        return _from_pairs(label, n, _both([(i, i + 1) for i in range(n - 1)]))
    if kind == "star":
        return _from_pairs(label, n, _both([(0, i) for i in range(1, n)]))
    if kind == "fully-connected":
        return _from_pairs(label, n, [(s, d) for s in range(n) for d in range(n) if s != d])
    if kind == "hub-and-spoke":
        groups = [SwitchGroup([r], [d for d in range(n) if d != r], 1, f"out{r}") for r in range(n)]
        groups += [SwitchGroup([s for s in range(n) if s != r], [r], 1, f"in{r}") for r in range(n)]
        return _from_pairs(label, n, [(s, d) for s in range(n) for d in range(n) if s != d], groups)
    if kind in ("torus2d", "torus3d", "mesh2d"):
        return _from_pairs(label, n, _grid(params, wrap=kind != "mesh2d"), alpha_us=GRID_ALPHA_US, gbps=GRID_GBPS)
    if kind == "hypercube":
        return _from_pairs(label, n, [(i, i ^ (1 << b)) for i in range(n) for b in range(params[0])])
    raise ModelError("topology", f"unknown generator {kind!r}")


def machine(name: str) -> Topology:
    """The named machine topologies, with timing and NIC models from the vendors' published numbers."""
    if name in ("dgx1", "ndv2"):
        nics = [Nic([0], [1], 1, 0, 2.6, 12.5)] if name == "ndv2" else []
        return Topology(name, 8, adjacency_links(DGX1_NVLINKS, 0.7, 25.0), nics=nics)
    if name == "dgx2":
        hub = generate("hub-and-spoke", [16])
        links = [attrs.evolve(l, alpha_us=0.35, gbps=125.0) for l in hub.links]
        nics = [Nic([2 * k + 1], [2 * k], 1, k, 2.6, 12.5) for k in range(8)]
        return Topology("dgx2", 16, links, hub.switches, nics)
    if name == "a100":
        hub = generate("hub-and-spoke", [8])
        links = [attrs.evolve(l, alpha_us=0.7, gbps=300.0) for l in hub.links]
        nics = [Nic([b], [b], 1, b % 2, 2.6, 25.0) for b in range(8)]
        return Topology("a100", 8, links, hub.switches, nics)
    if name == "mi250":
        nics = [Nic([g], [g], 1, 0, 2.6, 16.0) for g in range(16)]
        return Topology("mi250", 16, adjacency_links(MI250_XGMI, 0.7, 50.0), nics=nics)
    if name == "amd8":
        return Topology("amd8", 8, adjacency_links(AMD8_WEIGHTS))
    raise ModelError("topology", f"unknown machine {name!r}")


_NAME = re.compile(r"^([a-z0-9-]+?)(?::(\d+(?:x\d+)*))?$")


def did_you_mean(name: str, choices: list[str]) -> str | None:
    """The closest known name to a mistyped one (difflib's ratio), or None when nothing is close."""
    close = difflib.get_close_matches(name.strip().lower(), choices, n=1, cutoff=0.6)
    return close[0] if close else None


def is_builtin_topology(name: str) -> bool:
    m = _NAME.match(name)
    return m is not None and ((m.group(1) in GENERATORS and m.group(2) is not None)
                              or (m.group(1) in MACHINES and m.group(2) is None))


def topology(name: str, nodes: int = 1) -> Topology:
    """A built-in topology by name (`ring:8`, `torus2d:4x4`, `dgx1`, ...), optionally on several nodes."""
    m = _NAME.match(name.strip().lower())
    if m and m.group(1) in MACHINES and m.group(2) is None:
        topo = machine(m.group(1))
    elif m and m.group(1) in GENERATORS:
        if m.group(2) is None:
            raise ModelError("topology", f"{m.group(1)} needs a size: {GENERATORS[m.group(1)].split(',')[0]}")
        params = [int(x) for x in m.group(2).split("x")]
        if any(p > MAX_RANKS for p in params):
            raise ModelError("topology", f"{name}: more than {MAX_RANKS} ranks")
        topo = generate(m.group(1), params)
    else:
        known = ", ".join([f"{g}:..." for g in GENERATORS] + list(MACHINES))
        kind, _, size = name.strip().lower().partition(":")
        hint = did_you_mean(kind, [*GENERATORS, *MACHINES])
        if hint and size and hint in GENERATORS:
            hint = f"{hint}:{size}"
        raise ModelError("topology", f"unknown topology {name!r}" + (f"; did you mean {hint!r}?" if hint else "")
                         + f" (built-ins: {known}; or give a .toml file)")
    check_composed(topo, nodes)
    return topo.compose(nodes)


def check_composed(topo: Topology, nodes: int) -> None:
    """Refuse `nodes` copies of `topo` above MAX_RANKS ranks before composing them (quadratic in nodes)."""
    if not isinstance(nodes, int) or nodes <= 1:
        return
    if topo.ranks * nodes > MAX_RANKS:
        raise ModelError("nodes", f"= {nodes}: {nodes} x {topo.ranks} ranks is more than {MAX_RANKS} ranks in all")
    per_pair = sum(len(a.senders) * len(b.receivers) for a in topo.nics for b in topo.nics if a.rail == b.rail)
    links = nodes * (nodes - 1) * per_pair + nodes * len(topo.links)
    if links > MAX_LINKS:
        raise ModelError("nodes", f"= {nodes}: the composed topology would have {links} links, more than {MAX_LINKS}")


# --- collectives ---------------------------------------------------------------------------------

@attrs.frozen
class CollectiveSpec:
    """A collective family as expressions: `chunks` over ranks/root, the rest over rank/chunk too."""

    name: str
    chunks: str
    pre: str
    post: str
    address: str
    rooted: bool = False
    description: str = ""

    def instantiate(self, ranks: int, root: int | None = None, chunks: int = 1,
                    ranks_fixed: int | None = None) -> Collective:
        if not isinstance(ranks, int) or ranks < 1 or ranks > MAX_RANKS:
            raise ModelError("ranks", f"must be an integer between 1 and {MAX_RANKS}, got {ranks!r}")
        if self.rooted:
            root = 0 if root is None else root
            if not 0 <= root < ranks:
                raise ModelError("root", f"= {root}: rank out of range ({ranks} ranks)")
        elif root is not None:
            raise ModelError("root", f"collective {self.name!r} takes no root")
        base = {"ranks": ranks, "root": root if root is not None else 0}
        count = _eval(expr.parse(self.chunks, {"ranks", "root"}, "chunks"), base, "chunks")
        if count < 1 or count > MAX_RANKS * MAX_RANKS:
            raise ModelError("chunks", f"= {count} (from {self.chunks!r} at ranks={ranks}): must be between 1 and "
                                       f"{MAX_RANKS * MAX_RANKS}")
        from smtcoll.limits import check_cells

        check_cells(self.name, ranks, count, chunks)  # before evaluating ranks x chunks expressions
        allowed = {"rank", "chunk", "ranks", "chunks", "root"}
        pre = expr.parse(self.pre, allowed, "pre")
        post = expr.parse(self.post, allowed, "post")
        # an address belongs to a chunk, whatever rank holds it: `rank` has no value there
        address = expr.parse(self.address, allowed - {"rank"}, "address")
        env = dict(base, chunks=count)
        fast = _instantiate_fast(pre, post, address, ranks, count, env)
        if fast is not None:
            coll = Collective(self.name, ranks, count, fast[0], fast[1], fast[2], root if self.rooted else None)
            return coll.with_chunks(chunks)
        pre_pairs, post_pairs, addrs = [], [], []
        for c in range(count):
            env["chunk"] = c
            addrs.append(_eval(address, env, "address"))
            for r in range(ranks):
                env["rank"] = r
                if _eval(pre, env, "pre"):
                    pre_pairs.append((r, c))
                if _eval(post, env, "post"):
                    post_pairs.append((r, c))
        coll = Collective(self.name, ranks, count, pre_pairs, post_pairs, addrs,
                          root if self.rooted else None)
        return coll.with_chunks(chunks)


Pairs = list[tuple[int, int]]


def _instantiate_fast(pre: expr.Expr, post: expr.Expr, address: expr.Expr, ranks: int, count: int,
                      env: dict[str, int]) -> tuple[Pairs, Pairs, list[int]] | None:
    """The relations and addresses the loop in `instantiate` computes, with far fewer evaluations (a
    1024-rank Allgather has a million (rank, chunk) points): an expression is evaluated once when it uses
    neither `rank` nor `chunk`, once per chunk without `rank`, once per rank without `chunk`, and only at
    rank E when it reads `rank == E and ...` (false elsewhere, see `expr.rank_equals`). Every evaluation
    has a value the loop computes too; on any error, None, and the loop runs to report its first error."""
    if "rank" in address.variables:
        return None  # the loop evaluates the address outside the rank loop: keep its exact behaviour
    try:
        addrs = [address.evaluate(dict(env, chunk=c)) for c in range(count)]
        pre_pairs = _points(pre, ranks, count, env)
        post_pairs = _points(post, ranks, count, env)
    except ModelError:
        return None
    if pre_pairs is None or post_pairs is None:
        return None
    return pre_pairs, post_pairs, addrs


def _points(e: expr.Expr, ranks: int, count: int, env: dict[str, int]) -> Pairs | None:
    uses = e.variables
    if "rank" not in uses and "chunk" not in uses:
        return [(r, c) for r in range(ranks) for c in range(count)] if e.evaluate(env) else []
    if "rank" not in uses:
        chunks = [c for c in range(count) if e.evaluate(dict(env, chunk=c))]
        return [(r, c) for r in range(ranks) for c in chunks]
    if "chunk" not in uses:
        return [(r, c) for r in range(ranks) if e.evaluate(dict(env, rank=r)) for c in range(count)]
    target = expr.rank_equals(e)
    if target is None:
        return None
    out = []
    for c in range(count):
        at = dict(env, chunk=c)
        r = target.evaluate(at)
        if 0 <= r < ranks and e.evaluate(dict(at, rank=r)):
            out.append((r, c))
    return out


def _eval(e: expr.Expr, env: dict[str, int], field: str) -> int:
    try:
        return e.evaluate(env)
    except ModelError as err:
        raise ModelError(field, err.detail) from None


# the built-ins are the rows of the one table (smtcoll/collectives.py), instantiated from their expressions
COLLECTIVES: dict[str, CollectiveSpec] = {
    k.name: CollectiveSpec(k.name, k.chunks, k.pre, k.post, k.address, k.rooted, k.description)
    for k in collectives.TABLE
}
ALIASES = collectives.ALIASES


def collective_spec(name: str) -> CollectiveSpec:
    kind = collectives.lookup(name)
    if kind is None:
        key = name.strip().lower()
        hint = did_you_mean(key, [*COLLECTIVES, *ALIASES])
        hint = ALIASES.get(hint, hint) if hint else None
        raise ModelError("collective", f"unknown collective {name!r}" + (f"; did you mean {hint!r}?" if hint else "")
                         + f" (built-ins: {', '.join(COLLECTIVES)}; or give a .toml file)")
    return COLLECTIVES[kind.name]


def collective(name: str, ranks: int, root: int | None = None, chunks: int = 1) -> Collective:
    return collective_spec(name).instantiate(ranks, root, chunks)
