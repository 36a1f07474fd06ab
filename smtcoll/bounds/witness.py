"""Witnesses re-checked from scratch (used by `smtcoll proof check`): the recorded numbers are never trusted."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from smtcoll.bounds.cuts import hops_bound
from smtcoll.bounds.cycle import cycle_bound
from smtcoll.bounds.demand import must_enter, must_receive
from smtcoll.bounds.distance import bfs
from smtcoll.bounds.entry import entry_bound
from smtcoll.bounds.holdings import holdings_bound
from smtcoll.bounds.hubs import hubs_bound
from smtcoll.bounds.inflow import inflow_bound
from smtcoll.bounds.network import cut_capacity
from smtcoll.bounds.ports import ports_bound
from smtcoll.bounds.rails import rails_bound
from smtcoll.bounds.reach import reach_bound
from smtcoll.bounds.relay import relay_bound
from smtcoll.bounds.results import Bound
from smtcoll.bounds.summed import summed_bound
from smtcoll.errors import ModelError
from smtcoll.model import Collective, Topology

# the bounds whose witness records a recursion, and the numbers of it that `proof check` compares
RECOMPUTED: dict[str, tuple[Callable[[Topology, Collective], Bound], tuple[str, ...]]] = {
    "relay": (relay_bound, ("nodes", "capacity", "far", "relay", "last", "known")),
    "entry": (entry_bound, ("node", "inside", "direction", "must_enter", "must_leave", "source", "capacity",
                              "farthest", "hops", "ramp")),
    "cycle": (cycle_bound, ("cycle", "distance")),
    "reach": (reach_bound, ("rank", "must_hold", "reach", "ramp")),
    "inflow": (inflow_bound, ("node", "ranks", "outside", "entry", "fanout", "ramp", "inflow", "must", "early")),
    "ports": (ports_bound, ("node", "rounds", "must_hold", "rich", "need", "receivers", "patterns")),
    "rails": (rails_bound, ("rank", "must_hold", "rail", "mixed", "reach")),
    "hubs": (hubs_bound, ("tight", "ramp2", "multipliers", "targets", "psi", "free", "total", "must")),
    "summed": (summed_bound, ("out", "shared", "take", "ramp", "summed", "must")),
}


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
        if kind == "holdings":  # no choice either: the recursion is recomputed in plain integers
            b = holdings_bound(topo, coll, exact=True)
            if b.value is None:
                return 10**9 if b.note.endswith("no schedule exists") else None
            _same_keys(witness, b.witness, ("rank", "must_hold", "holdings", "address"))
            return int(b.value)
        if kind == "setcut":  # the choice is the set, the family and the cover; the counts are recomputed
            from smtcoll.bounds.setcut import check_setcut

            return check_setcut(witness, topo, coll)
        if kind in RECOMPUTED:  # no choice either: recomputed from the links and the collective
            bound, keys = RECOMPUTED[kind]
            b = bound(topo, coll)
            if b.value is None:
                return None
            _same_keys(witness, b.witness, keys)
            return int(b.value)
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError("witness", f"malformed {kind} witness: {e}") from None
    raise ModelError("witness", f"unknown bound kind {kind!r} (expected steps, receive, cut, hops, holdings, entry, "
                                f"relay, cycle, reach, inflow, ports, rails, hubs, summed or setcut)")


def _fraction(x: Any, what: str) -> Fraction:
    if not isinstance(x, str | int) or isinstance(x, bool):
        raise ModelError("witness", f"{what} must be an exact fraction written as a string, got {x!r}")
    try:
        return Fraction(x)
    except (ValueError, ZeroDivisionError):
        raise ModelError("witness", f"{what} is not a fraction: {x!r}") from None


def _same_keys(witness: dict[str, Any], computed: dict[str, Any], keys: tuple[str, ...]) -> None:
    """A recorded ramp or recursion must be the one recomputed, number for number."""
    for key in keys:
        if key in witness:
            _same(key, witness[key], computed.get(key))


def _same(what: str, recorded: Any, computed: Any) -> None:
    if recorded != computed:
        raise ModelError("witness", f"{what}: the certificate records {recorded}, recomputed {computed}")


def recheck_throughput(witness: Any, topo: Topology, coll: Collective, gbps_per_unit: Fraction) -> Fraction:
    """The us-per-byte a throughput certificate proves, recomputed in exact arithmetic from the topology,
    the collective and the certificate's choice (its cut, or its lengths); every number it records must
    match what is recomputed. No LP solver: an LP certificate's lengths are checked by weak duality
    (exact shortest distances). Raises ModelError when anything differs."""
    from smtcoll.bounds import throughput as tp

    if not isinstance(witness, dict):
        raise ModelError("witness", "expected an object")
    kind = witness.get("bound")
    r = tp.rates(topo, gbps_per_unit)
    a = tp.addresses(coll)
    try:
        if kind == "cut":
            inside = tuple(sorted({int(x) for x in witness["inside"]}))
            if not inside or len(inside) >= topo.ranks or not all(0 <= x < topo.ranks for x in inside):
                raise ModelError("witness", "the cut must be a non-empty proper subset of the ranks")
            _same("inside", [int(x) for x in witness["inside"]], list(inside))
            cut = tp.CutCertificate(inside, len(must_enter(coll, inside)), a, tp.cut_rate(topo, r, inside))
            _same("must_enter", witness["must_enter"], cut.must_enter)
            _same("addresses", witness["addresses"], a)
            _same("rate_bytes_per_us", _fraction(witness["rate_bytes_per_us"], "rate_bytes_per_us"), cut.rate)
            if not cut.rate:
                raise ModelError("witness", "no link enters the cut")
            return cut.us_per_byte
        if kind == "transfers":
            raw = witness["parts"]
            parts = None if raw is None else tuple(tuple(int(x) for x in p) for p in raw)
            t = tp.transfers_for(topo, coll, r, parts)
            if t is None:
                raise ModelError("witness", "no transfers are needed")
            _same("transfers", witness["transfers"], t.transfers)
            _same("addresses", witness["addresses"], a)
            _same("side", witness["side"], t.side)
            _same("rate_bytes_per_us", _fraction(witness["rate_bytes_per_us"], "rate_bytes_per_us"), t.rate)
            return t.us_per_byte
        if kind == "lengths":
            links = [_fraction(x, "a link length") for x in witness["link_lengths"]]
            groups = [_fraction(x, "a group length") for x in witness["group_lengths"]]
            cert = tp.lengths_certificate(topo, coll, r, links, groups)
            _same("demand_distance", _fraction(witness["demand_distance"], "demand_distance"), cert.demand_distance)
            _same("capacity_length", _fraction(witness["capacity_length"], "capacity_length"), cert.capacity_length)
            if not cert.capacity_length:
                raise ModelError("witness", "all lengths are zero")
            return cert.us_per_byte
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError("witness", f"malformed {kind} witness: {e}") from None
    raise ModelError("witness", f"unknown throughput bound {kind!r} (expected cut, transfers or lengths)")
