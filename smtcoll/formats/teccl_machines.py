"""The real machines behind TE-CCL's topology classes (`teccl/topologies/*.py`), as our topologies.

A TE-CCL file holds no topology. Without `--topology`, `machine_for` recognizes the class a file was made
for from its node ids and hops, and returns the *real* machine that class models (not the class itself,
whose defects are what the checker must catch: GPU 0 of NDv2 with two chassis is a GPU, a 4x4 mesh has no
row-end links). The same machines are written out under `examples/topologies/`.

- DGX2 (2 chassis, hard-coded): TE-CCL ids 1-16 and 18-33 are GPUs (ranks 0-31), 0 and 17 NVSwitches.
  GPU -> NVSwitch -> GPU is one link of 125 GB/s and alpha 0.7 us (0.35 us per leg), with switch groups
  for each GPU's port; one-way IB of 12.5 GB/s, alpha 2.6 us: ids 2->18, 4->20, ..., 16->32 and
  19->1, 21->3, ..., 33->15.
- NDv2 (8 GPUs per chassis, DGX-1 hybrid cube-mesh, 50 or 25 GB/s, alpha 0.7 us): with 2 chassis, ids
  0-15 are GPUs and the only IB links are 8->1 and 0->9 (12.5 GB/s, alpha 1.3 us); with c > 2 chassis,
  id 0 is an IB switch, chassis i has ids 8i+1..8i+8, and IB runs from each chassis's id 8i+1 through the
  switch to every other chassis's id 8j+2 (12.5 GB/s, 1.3 us per leg).
- Mesh (side n): a real n x n mesh, 100 GB/s per direction, no latency.
"""

from __future__ import annotations

from smtcoll.model import Link, SwitchGroup, Topology

NDV2_FAST = ((0, 1), (0, 4), (1, 3), (2, 3), (2, 6), (4, 5), (5, 7), (6, 7))  # 50 GB/s NVLink pairs
NDV2_SLOW = ((0, 2), (0, 3), (1, 2), (1, 5), (3, 7), (4, 6), (4, 7), (5, 6))  # 25 GB/s


def dgx2_2chassis() -> Topology:
    links, groups = [], []
    for c in range(2):
        gpus = list(range(16 * c, 16 * c + 16))
        for s in gpus:
            links += [Link(s, d, 10, 0.7, 125.0) for d in gpus if d != s]
            others = [x for x in gpus if x != s]
            groups += [SwitchGroup([s], others, 10, f"nvswitch{c}-out{s}"),
                       SwitchGroup(others, [s], 10, f"nvswitch{c}-in{s}")]
    for k in range(8):
        links += [Link(2 * k + 1, 16 + 2 * k, 1, 2.6, 12.5), Link(17 + 2 * k, 2 * k, 1, 2.6, 12.5)]
    return Topology("teccl-dgx2-2chassis", 32, sorted(links, key=lambda lk: (lk.src, lk.dst)), groups)


def _cube_mesh(offset: int) -> list[Link]:
    out = []
    for pairs, bw, gbps in ((NDV2_FAST, 2, 50.0), (NDV2_SLOW, 1, 25.0)):
        for a, b in pairs:
            out += [Link(offset + a, offset + b, bw, 0.7, gbps), Link(offset + b, offset + a, bw, 0.7, gbps)]
    return out


def ndv2(chassis: int) -> Topology:
    links = [lk for c in range(chassis) for lk in _cube_mesh(8 * c)]
    groups = []
    if chassis == 2:
        links += [Link(8, 1, 1, 1.3, 12.5), Link(0, 9, 1, 1.3, 12.5)]
    else:  # rank 8i+r is TE-CCL id 8i+r+1: IB from rank 8i through the switch to rank 8j+1
        senders = [8 * c for c in range(chassis)]
        receivers = [8 * c + 1 for c in range(chassis)]
        for i, s in enumerate(senders):
            links += [Link(s, r, 1, 2.6, 12.5) for j, r in enumerate(receivers) if j != i]
        if chassis > 2:
            for i, s in enumerate(senders):
                groups.append(SwitchGroup([s], [r for j, r in enumerate(receivers) if j != i], 1, f"ib-out{s}"))
            for j, r in enumerate(receivers):
                groups.append(SwitchGroup([s for i, s in enumerate(senders) if i != j], [r], 1, f"ib-in{r}"))
    return Topology(f"teccl-ndv2-{chassis}chassis", 8 * chassis, sorted(links, key=lambda lk: (lk.src, lk.dst)), groups)


def mesh(side: int, teccl_class: bool = False) -> Topology:
    """The real side x side mesh, or (teccl_class) TE-CCL's Mesh class, which also links row ends."""
    n = side * side
    links = []
    for i in range(n):
        for j in range(n):
            if teccl_class:
                ok = j in (i - 1, i + 1, i - side, i + side)
            else:
                ok = (i // side == j // side and abs(i - j) == 1) or abs(i - j) == side
            if ok and 0 <= j < n:
                links.append(Link(i, j, 1, None, 100.0))
    return Topology(f"teccl-mesh{side}-class" if teccl_class else f"mesh{side}x{side}", n, links)


# The largest machine a file's node ids may make us build: TE-CCL's evaluation goes to 128 GPUs; a larger
# machine is built only when the user names it (--topology), so that a few bytes of ids cannot imply a
# machine of millions of links (checked before anything is built).
MAX_INFERRED_RANKS = 256


class TooLargeMachine(Exception):
    """The node ids fit a class, but its machine is larger than MAX_INFERRED_RANKS."""


def _bounded(name: str, ranks: int) -> None:
    if ranks > MAX_INFERRED_RANKS:
        raise TooLargeMachine(f"the node ids fit TE-CCL's {name} with {ranks} GPUs, more than the "
                              f"{MAX_INFERRED_RANKS} of a machine inferred from a file; give the machine with "
                              "--topology if it is genuine")


def machine_for(ids: set[int], switches: set[int], hops: set[tuple[int, int]]) -> Topology | None:
    """The real machine of the TE-CCL class a file was made for, or None when no class fits; raises
    TooLargeMachine (before building it) when it would have more than MAX_INFERRED_RANKS ranks."""
    if not ids:
        return None
    top = max(ids)
    if switches == {0, 17} and top == 33:
        return dgx2_2chassis()
    side = round(top ** 0.5 + 0.5) if top > 0 else 0
    if not switches and side * side == top + 1 and side > 1 and all(abs(i - j) in (1, side) for i, j in hops):
        _bounded(f"Mesh class (side {side})", side * side)
        return mesh(side)
    if switches <= {0} and top == 15:
        return ndv2(2)
    if switches == {0} and top % 8 == 0 and top >= 24:
        _bounded(f"NDv2 class ({top // 8} chassis)", top)
        return ndv2(top // 8)
    return None
