"""Witnesses re-checked from scratch (used by `smtcoll proof check`): the recorded numbers are never trusted."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from smtcoll.bounds.cuts import hops_bound
from smtcoll.bounds.demand import must_enter, must_receive
from smtcoll.bounds.distance import bfs
from smtcoll.bounds.network import cut_capacity
from smtcoll.errors import ModelError
from smtcoll.model import Collective, Topology


def check_witness(kind: str, witness: dict[str, Any], topo: Topology, coll: Collective) -> int | None:
    """Recompute the bound a witness proves, from the topology, the collective and the witness's
    choice only (its chunk and rank, its rank, or its set of ranks); its recorded numbers are ignored.
    Returns the proved lower bound (steps for 'steps', rounds otherwise), or raises ModelError."""
    try:
        if kind == "steps":
            c, r = int(witness["chunk"]), int(witness["rank"])
            if (r, c) not in set(coll.post):
                raise ModelError("witness", f"rank {r} does not need chunk {c}")
            holders = [h for h, x in coll.pre if x == c]
            dist, _ = bfs(topo, holders)
            return dist.get(r, 10**9)
        if kind == "receive":
            r = int(witness["rank"])
            if not 0 <= r < topo.ranks:
                raise ModelError("witness", f"rank {r} out of range")
            k = len(must_receive(coll, r))
            b, _ = cut_capacity(topo, [r])
            return 10**9 if b == 0 and k else (math.ceil(Fraction(k, b)) if k else 0)
        if kind == "cut":
            inside = sorted({int(x) for x in witness["inside"]})
            if not inside or len(inside) >= topo.ranks or not all(0 <= x < topo.ranks for x in inside):
                raise ModelError("witness", "the cut must be a non-empty proper subset of the ranks")
            d = len(must_enter(coll, inside))
            b, _ = cut_capacity(topo, inside)
            return 10**9 if b == 0 and d else (math.ceil(Fraction(d, b)) if d else 0)
        if kind == "hops":  # no choice in the witness: recomputed from the topology and collective
            b = hops_bound(topo, coll)
            return 10**9 if b.value is None else int(b.value)
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError("witness", f"malformed {kind} witness: {e}") from None
    raise ModelError("witness", f"unknown bound kind {kind!r} (expected steps, receive, cut or hops)")
