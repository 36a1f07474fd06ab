"""The α-β model that ranks candidates: a schedule lowered with a protocol and a number of instances.

A step of the schedule takes `max α of its links + the protocol's latency + per extra instance latency`
plus its rounds times the time one chunk takes on its slowest link. With `B` the buffer size (bytes, the
runtime's nBytes) and `A` the addresses in the largest per-rank buffer, a chunk is `B / A` bytes, so

    T(B) = fixed + slope * B,   fixed = sum over steps of latency,   slope = sum over steps of rounds / (A * rate)

`rate` is the link's bytes per microsecond per unit of bandwidth, times the protocol's efficiency, and at most
what `instances` channels can drive. Every candidate is a line; selection takes their lower envelope.
The numbers are exact fractions so that ties and crossovers are the same on every machine.

Model parameters (a model, not a measurement: `docs/sweep.md`):
- protocol latency per hop, NCCL's ring figures for NVLink (`src/graph/tuning.cc`, `hwLat`):
  LL 0.4 µs, Simple 5.7 µs; LL carries 4 bytes of data per 8 sent (efficiency 1/2), Simple all of them;
- a channel (one instance) drives at most `CHANNEL_GBPS` GB/s; each extra instance costs
  `INSTANCE_LATENCY_US` per step (more thread blocks to start and synchronize);
- links without timing get `--alpha-us` / `--gbps-per-unit` (defaults `DEFAULT_ALPHA_US`, `DEFAULT_GBPS`).
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from smtcoll.model import Collective, Schedule, Topology

PROTOCOL_LATENCY_US = {"LL": Fraction(4, 10), "Simple": Fraction(57, 10)}
PROTOCOL_EFFICIENCY = {"LL": Fraction(1, 2), "Simple": Fraction(1)}
PROTOCOLS = ("LL", "Simple")
INSTANCES = (1, 2, 4, 8)
CHANNEL_GBPS = Fraction(20)
INSTANCE_LATENCY_US = Fraction(1, 5)
DEFAULT_ALPHA_US = 1.0
DEFAULT_GBPS = 25.0
# nccl-tests' bus bandwidth: algorithm bandwidth times the share of the data every rank must move
BUS_FACTOR = {"allreduce": lambda n: Fraction(2 * (n - 1), n), "allgather": lambda n: Fraction(n - 1, n),
              "reducescatter": lambda n: Fraction(n - 1, n), "alltoall": lambda n: Fraction(n - 1, n)}


@attrs.frozen
class Timing:
    """α (µs) and speed (GB/s per unit of bandwidth) for links that carry none."""

    alpha_us: float = DEFAULT_ALPHA_US
    gbps_per_unit: float = DEFAULT_GBPS

    def alpha(self, topo: Topology, src: int, dst: int) -> Fraction:
        link = topo.link(src, dst)
        value = link.alpha_us if link is not None and link.alpha_us is not None else self.alpha_us
        return Fraction(repr(float(value)))  # the decimal as written (0.7 is 7/10)

    def unit_rate(self, topo: Topology, src: int, dst: int) -> Fraction:
        """Bytes per µs of one unit of bandwidth (GB/s = 1e3 bytes/µs)."""
        link = topo.link(src, dst)
        if link is not None and link.gbps:
            return Fraction(repr(float(link.gbps))) * 1000 / link.bandwidth
        return Fraction(repr(float(self.gbps_per_unit))) * 1000


def addresses(coll: Collective) -> int:
    """Addresses in the largest per-rank buffer (input or output): B / this is one chunk's bytes."""
    largest = 1
    for sets in (coll.pre_sets, coll.post_sets):
        for s in sets:
            largest = max(largest, len({coll.address[c] for c in s}))
    return largest


@attrs.frozen
class Line:
    """T(B) = fixed + slope * B, in µs."""

    fixed: Fraction
    slope: Fraction

    def at(self, size: int) -> Fraction:
        return self.fixed + self.slope * size


def predict(schedule: Schedule, protocol: str, instances: int, timing: Timing) -> Line:
    """The α-β line of `schedule` lowered with `protocol` and `instances` (module docstring)."""
    topo = schedule.topology
    chunk_share = addresses(schedule.collective)
    fixed, slope = Fraction(0), Fraction(0)
    for step in schedule.steps:
        pairs = sorted({(s.src, s.dst) for s in step.sends})
        if not pairs:
            continue
        fixed += max(timing.alpha(topo, u, v) for u, v in pairs) + PROTOCOL_LATENCY_US[protocol] \
            + INSTANCE_LATENCY_US * (instances - 1)
        rate = min(min(timing.unit_rate(topo, u, v), CHANNEL_GBPS * 1000 * instances) for u, v in pairs)
        slope += Fraction(step.rounds) / (chunk_share * rate * PROTOCOL_EFFICIENCY[protocol])
    return Line(fixed, slope)


def bound_line(topo: Topology, coll: Collective, steps: int, rounds_per_chunk: Fraction, timing: Timing) -> Line:
    """No schedule beats `steps * min α + rounds_per_chunk * (B / A) / fastest rate`, whatever its protocol
    and instances: the bound the report measures the gap to (protocol overheads are not counted)."""
    alphas = [timing.alpha(topo, link.src, link.dst) for link in topo.links]
    rates = [timing.unit_rate(topo, link.src, link.dst) for link in topo.links]
    if not alphas:
        return Line(Fraction(0), Fraction(0))
    return Line(steps * min(alphas), rounds_per_chunk / (addresses(coll) * max(rates)))


def bus_bandwidth(kind: str, ranks: int, size: int, micros: Fraction) -> float | None:
    """nccl-tests' bus bandwidth in GB/s for a call of `size` bytes taking `micros`."""
    factor = BUS_FACTOR.get(kind)
    if factor is None or micros <= 0:
        return None
    return float(Fraction(size) / micros / 1000 * factor(ranks))
