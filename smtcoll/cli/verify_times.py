"""The lower bound `smtcoll verify` shows next to claimed and verified times: `smtcoll bounds`' alpha-beta
time bound for the machine, the collective and the chunk size. The checker receives it as a function
(`smtcoll.model.timed.BoundFn`) so that it never depends on the bounds module."""

from __future__ import annotations

import importlib
from typing import Any

from smtcoll.model import Collective, Topology

FULL_BOUND_UP_TO = 16  # ranks; above, only the distance bound: the receive bound's max-flows cost seconds


def lower_bound(topo: Topology, coll: Collective, chunk_bytes: float) -> dict[str, Any] | None:
    """steps x alpha + rounds x chunk / GB/s, or None when the topology has no timing. Above
    `FULL_BOUND_UP_TO` ranks rounds >= steps only: weaker, as sound."""
    if topo.ranks != coll.ranks:
        return None
    # Loaded only when a time is shown, and optional: `verify` runs on the light install (no numerics, the
    # import-linter contract), where the bound is simply left out.
    try:
        b_mod = importlib.import_module("smtcoll.bounds")
    except ImportError:
        return None
    best_rounds, distance_bound, flow_network = b_mod.best_rounds, b_mod.distance_bound, b_mod.flow_network
    receive_bound, time_bound = b_mod.receive_bound, b_mod.time_bound
    steps = distance_bound(topo, coll)
    parts = [steps]
    if coll.ranks <= FULL_BOUND_UP_TO:
        parts.append(receive_bound(topo, coll, flow_network(topo)))
    rounds = best_rounds(*parts)
    out_addrs = max(len({coll.address[c] for c in s}) for s in coll.post_sets)
    b = time_bound(topo, coll, steps, rounds, int(round(chunk_bytes * out_addrs)))
    if b.value is None:
        return None
    return {"value": b.value, "unit": b.unit,
            "model": "alpha-beta lower bound (smtcoll bounds: steps x alpha + rounds x beta)"}
