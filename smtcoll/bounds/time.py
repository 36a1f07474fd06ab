"""The k-synchronous alpha-beta time bound: steps x alpha + rounds x one chunk at the fastest unit speed."""

from __future__ import annotations

from smtcoll.bounds.forest import unit_speed
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology


def time_bound(topo: Topology, coll: Collective, steps: Bound, rounds: Bound, size: int | None,
               gbps_per_unit: float | None = None, alpha_us: float | None = None) -> Bound:
    """k-synchronous alpha-beta time >= S_min * alpha + R_min * chunk_bytes / unit_speed, with the
    smallest link alpha, the fastest per-unit link speed, and chunk_bytes = size / (addresses in the
    largest per-rank output)."""
    if size is None:
        return Bound("time", None, "us", {}, "give --size BYTES")
    speed = unit_speed(topo, gbps_per_unit)
    alphas = [l.alpha_us for l in topo.links if l.alpha_us is not None]
    alpha = alpha_us if alpha_us is not None else (min(alphas) if alphas else None)
    if speed is None or alpha is None or steps.value is None or rounds.value is None:
        return Bound("time", None, "us", {}, "the topology has no timing (give --gbps-per-unit and --alpha-us)"
                     if speed is None or alpha is None else "no schedule exists")
    out_addrs = max(len({coll.address[c] for c in s}) for s in coll.post_sets)
    chunk_bytes = size / max(1, out_addrs)
    beta_us = chunk_bytes / (speed * 1e3)  # GB/s = 1e3 bytes per microsecond
    value = steps.value * alpha + rounds.value * beta_us
    w = {"steps": steps.value, "alpha_us": alpha, "rounds": rounds.value, "chunk_bytes": round(chunk_bytes, 6),
         "gbps_per_unit": round(speed, 6), "round_us": round(beta_us, 6),
         "formula": "steps * alpha_us + rounds * chunk_bytes / (gbps_per_unit * 1e3)"}
    return Bound("time", round(value, 6), "us", w)

