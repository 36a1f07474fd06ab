"""Throughput constructions: NCCL's own algorithms (the baselines) and bandwidth-optimal schedules.

Every construction returns a `Schedule` that the independent checker accepted (a rejection is a bug of
ours: `InternalError`, exit 70) and chooses its own chunk factor C. No solver here (import-linter).

- `constructions(topo, coll)`: every construction that applies, the candidates the sweep ranks;
- `METHODS`: the names usable as `smtcoll synth --method NAME` and from the API (`build`).

Families, one module each: `rings` (the ring search and ring schedules), `nccl` (NCCL's ring, tree and
direct baselines), `multiring` (all lane-disjoint rings at once), `treepack` (greedy tree packing), `forest`
(the exact tree packing for links of unequal speed), `hierforest` (that packing inside each node, fed
through a NIC per GPU), `hier` (across NICs),
`exchange` (Alltoall routed by the flow LP, pipelined in shifted rounds), `rail_alltoall` (Alltoall
across nodes of rails, each byte through one NIC, on rails that keep the NICs from waiting for each other),
`pairwise` (Allgather, ReduceScatter, Allreduce straight to each destination in the same shifted rounds,
where every pair is linked), `lanes` (Allreduce across two nodes whose NICs are not one per GPU each way: that exchange
feeding the NIC lanes). docs/synth.md says what each is, where it comes from and when it reaches the bound.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from smtcoll.errors import ModelError
from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.checked import checked as check
from smtcoll.synth.constructions import (
    exchange,
    forest,
    hier,
    hierforest,
    lanes,
    multiring,
    nccl,
    pairwise,
    rail,
    rail_alltoall,
    treepack,
)
from smtcoll.synth.constructions.common import NotApplicable

Builder = Callable[[Topology, Collective], Schedule]


@attrs.frozen
class Construction:
    """A checked schedule from one construction. `nccl` names the NCCL algorithm it reproduces
    (`ring`, `tree`, `p2p`) for the baselines, None for smtcoll's own; `chunks` is its C."""

    name: str
    schedule: Schedule
    nccl: str | None
    chunks: int


# name -> (builder, NCCL algorithm it reproduces or None)
_FAMILIES: dict[str, tuple[Builder, str | None]] = {
    "nccl_ring": (nccl.ring, "ring"),
    "nccl_tree": (nccl.tree, "tree"),
    "nccl_direct": (nccl.direct, "p2p"),
    "multiring": (multiring.multiring, None),
    "hier": (hier.hier, None),
    "hier2d": (hier.hier2d, None),
    "rail": (rail.rail, None),
    "treepack": (treepack.treepack, None),
    "exchange": (exchange.exchange, None),
    "rail_alltoall": (rail_alltoall.rail_alltoall, None),
    "pairwise": (pairwise.pairwise, None),
    "lanes": (lanes.lanes, None),
    "forest": (forest.forest, None),
    "hierforest": (hierforest.hierforest, None),
}
# families that offer the sweep more than one schedule: name -> every schedule, the family's own first
# (`forest`: its count of trees per root and the most trees within the runtimes' limits, `forest.forests`;
# `pairwise`: across nodes also its program with fused connections, which lowers at 8 instances, `pairwise.pairwises`;
# `treepack`: where the links' speeds per unit differ also the packing by speed, `treepack.treepacks`;
# `hierforest`: also its finer pieces with the NIC's extras, `hierforest.hierforests`;
# `rail_alltoall`: its rail classes and its own rails, `rail_alltoall.rail_alltoalls`)
_SEVERAL: dict[str, Callable[[Topology, Collective], list[Schedule]]] = {"forest": forest.forests,
                                                                          "pairwise": pairwise.pairwises,
                                                                          "treepack": treepack.treepacks,
                                                                          "hierforest": hierforest.hierforests,
                                                                          "rail_alltoall": rail_alltoall.rail_alltoalls}
# `synth --method` names (short) -> family
METHODS: dict[str, Builder] = {
    "ring": nccl.ring,
    "tree": nccl.tree,
    "direct": nccl.direct,
    "multiring": multiring.multiring,
    "hier": hier.hier,
    "hier2d": hier.hier2d,
    "rail": rail.rail,
    "treepack": treepack.treepack,
    "exchange": exchange.exchange,
    "rail_alltoall": rail_alltoall.rail_alltoall,
    "pairwise": pairwise.pairwise,
    "lanes": lanes.lanes,
    "forest": forest.forest,
    "hierforest": hierforest.hierforest,
}


def checked(schedule: Schedule, name: str) -> Schedule:
    """The schedule, once the independent checker accepts it; a rejection is an internal error."""
    return check(schedule, f"{name} construction")


def build(method: str, topo: Topology, coll: Collective) -> Schedule:
    """`synth --method NAME`: the checked schedule of one construction for the base collective `coll`
    (chunk factor 1: the construction chooses C). A construction that does not apply is a ModelError
    (exit 2) that says why."""
    if method not in METHODS:
        raise ModelError("--method", f"unknown construction {method!r} (choose from {', '.join(sorted(METHODS))})")
    try:
        sched = METHODS[method](topo, coll)
    except NotApplicable as e:
        raise ModelError("--method", f"{method} does not apply to {coll.name} on {topo.name}: {e}") from None
    return checked(sched, method)


def constructions(topo: Topology, coll: Collective) -> list[Construction]:
    """Every construction that applies to `coll` (the base collective, chunk factor 1) on `topo`, each
    checked, in a fixed order (baselines first). Two constructions giving the same schedule are both kept:
    the baseline under its NCCL name."""
    out = []
    for name, (builder, algo) in _FAMILIES.items():
        try:
            scheds = _SEVERAL[name](topo, coll) if name in _SEVERAL else [builder(topo, coll)]
        except NotApplicable:
            continue
        for sched in scheds:
            sched = checked(sched, name)
            out.append(Construction(name, sched, algo, sched.collective.chunk_factor))
    return out


__all__ = ["METHODS", "Construction", "NotApplicable", "build", "checked", "constructions"]
