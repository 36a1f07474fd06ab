"""Timed schedules: link transfers with a start and an end time, as MILP and greedy synthesizers write them.

A step schedule is the special case where every send of step i starts at the step's first round and ends
one round later. Readers (`smtcoll/formats/`) turn each native format into a `TimedSchedule` in the
format's own time unit and cost model; `smtcoll/check/timed.py` judges it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any, Literal

import attrs

from smtcoll.findings import Finding
from smtcoll.model.collective import Collective
from smtcoll.model.topology import SwitchGroup, Topology


def _dict(items: Mapping[str, Any]) -> dict[str, Any]:
    return dict(items)


def _tuple(items: Iterable) -> tuple:
    return tuple(items)


# A time: a number read from the file compares exactly as it is (parsing keeps the order and equality of
# decimal texts); a time a reader computes (a sum of delays) is a Fraction of the file's decimals, `exact`.
Time = Fraction | float | int


def exact(x: float | int | Fraction | str) -> Time:
    """A file's number as an exact fraction. A float's `repr` is the shortest text that reads back as the
    same float, which is the file's own decimal text for every number written with at most 15 significant
    digits: times computed as float sums are different roundings of the same value, so a send starting
    exactly when its chunk arrives (826.8 = 826.8) was refused. Not finite: left a float for the checks to
    report (`bad-time`)."""
    if isinstance(x, float):
        return Fraction(repr(x)) if math.isfinite(x) else x
    return Fraction(x)


def _fraction_free(v: float | Fraction) -> float:
    return float(v) if isinstance(v, Fraction) else v


@attrs.frozen
class Use:
    """A transfer's claim on a shared resource of the format's cost model (a link, a switch port, a NIC
    side) for [start, end), in the schedule's time unit."""

    resource: str
    start: Time
    end: Time
    amount: float = 1.0


@attrs.frozen
class Limit:
    """Capacity of one resource. `concurrent`: the amounts in use at any instant stay <= capacity.
    `window`: the amounts of uses starting in any `window` consecutive time units stay <= capacity
    (TE-CCL's per-epoch capacity)."""

    resource: str
    capacity: float
    kind: Literal["concurrent", "window"] = "concurrent"
    window: int = 1
    why: str = ""
    measure: str = "transfers"  # what the amounts count (`GB/s`: a speed, the sum of the transfers' rates)


@attrs.frozen
class Transfer:
    """Move the value at address `chunk` from `src` to `dst`: the sender must hold it at `start`; the
    receiver holds it from `end`. `hops` are the topology links it rides on (one link, or the links of a
    route through ranks); `place` locates it in the file (printed with findings)."""

    chunk: int
    src: int
    dst: int
    start: Time
    end: Time
    place: dict[str, Any] = attrs.field(factory=dict, converter=_dict)
    volume: float = 1.0
    hops: tuple[tuple[int, int], ...] = attrs.field(default=(), converter=_tuple)
    uses: tuple[Use, ...] = attrs.field(default=(), converter=_tuple)

    @property
    def links(self) -> tuple[tuple[int, int], ...]:
        return self.hops or ((self.src, self.dst),)


@attrs.frozen
class Quantity:
    """A time (or a throughput) with its unit and the model it was computed in."""

    value: float = attrs.field(converter=_fraction_free)  # JSON holds floats, never fractions
    unit: str
    model: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "unit": self.unit, "model": self.model}
        if self.note:
            out["note"] = self.note
        return out


@attrs.frozen
class TimedSchedule:
    """Transfers of one collective on one topology, in `unit` (`us`, `s`, `epoch`, ...).

    `us_per_unit` converts the unit to microseconds (None when the unit has no physical meaning).
    `conserve_volume`: a relay forwards what it received and cannot copy it (TE-CCL's AlltoAll LP, where
    the commodity a relay balances is all chunks of one source: `volume_group` = ranks);
    otherwise a rank that holds a chunk may send it any number of times. `claimed` is what the file says
    its time is, in `unit`; `model_time`, when set, is the time in the format's model computed by the reader.
    `chunk_bytes`, when known, gives the alpha-beta replay and the lower bound."""

    format: str
    model: str
    collective: Collective
    topology: Topology
    transfers: tuple[Transfer, ...] = attrs.field(converter=_tuple)
    unit: str = "us"
    us_per_unit: float | None = 1.0
    limits: tuple[Limit, ...] = attrs.field(default=(), converter=_tuple)
    claimed: Quantity | None = None
    chunk_bytes: float | None = None
    conserve_volume: bool = False
    findings: tuple[Finding, ...] = attrs.field(default=(), converter=_tuple)
    name: str = ""
    volume_group: int = 1  # with conserve_volume: relays balance volume per chunk // volume_group (a commodity)
    model_time: Quantity | None = None  # the format's own time when it is not the last delivery (ForestColl)


# A lower bound on the time of a collective on a topology for a chunk size in bytes, as a `Quantity.to_json()`
# (`smtcoll bounds` provides it; the checker takes it as a function so that it does not depend on it).
BoundFn = Callable[[Topology, Collective, float], "dict[str, Any] | None"]


def group_gbps(topo: Topology, group: SwitchGroup) -> float | None:
    """GB/s of a switch group: its bandwidth times the per-unit speed of the fastest link it bounds (the
    same rule as `smtcoll bounds`); None when those links have no speed."""
    speeds = [lk.gbps / lk.bandwidth for lk in topo.links
              if lk.gbps and lk.src in group.srcs and lk.dst in group.dsts]
    return group.bandwidth * max(speeds) if speeds else None
