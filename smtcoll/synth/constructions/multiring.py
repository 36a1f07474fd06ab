"""Multi-ring: Allgather, ReduceScatter and Allreduce over every lane-disjoint Hamiltonian ring at once,
with C a multiple of ranks x rings, the reduce-scatter + allgather pipeline of Patarasuk and Yuan
("Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 2009) spread over rings.

Where the rings use every lane into each rank (DGX-1: 6 rings of the 6 NVLinks per GPU), every rank
receives on all its lanes in every step: Allgather takes (N-1)/k rounds per chunk, the per-rank ingress
bound, and Allreduce 2(N-1)/(N k), the bound 2(N-1)/N of a buffer through k lanes.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.constructions.common import NotApplicable, kind
from smtcoll.synth.constructions.nccl import lowerable_rings, ring_schedule


def multiring(topo: Topology, base: Collective) -> Schedule:
    if kind(base) not in ("allgather", "reducescatter", "allreduce"):
        raise NotApplicable("multi-ring covers Allgather, ReduceScatter and Allreduce")
    return ring_schedule(topo, base, lowerable_rings(topo, base), "multiring")
