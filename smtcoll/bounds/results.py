"""The typed results of the step and round bounds: a `Bound` with its witness, and `Bounds` for one instance."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import attrs


@attrs.frozen
class Bound:
    """A lower bound (or, for throughput, an upper bound on algorithmic bandwidth) and its witness.
    `value` is None when the bound does not apply (`note` says why)."""

    name: str
    value: int | float | None
    unit: str
    witness: dict[str, Any] = attrs.field(factory=dict)
    note: str = ""
    # the exact rounds per chunk a rounds bound proves for every C (demand / capacity / C), read by the
    # synthesizer and `rounds_per_chunk` instead of digging the numbers out of the witness
    per_chunk: Fraction | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "unit": self.unit, "witness": self.witness}
        if self.note:
            out["note"] = self.note
        return out


@attrs.frozen
class Bounds:
    """All bounds for one (topology, collective): `steps` (S), `rounds` (R, for the collective's C),
    and the individual bounds they come from."""

    topology: str
    collective: str
    ranks: int
    chunks: int
    steps: Bound
    receive: Bound
    cut: Bound
    lp: Bound
    hops: Bound
    rounds: Bound
    rounds_per_chunk: Bound
    throughput: Bound
    time: Bound
    holdings: Bound | None = None  # bounds.holdings (after the others: positional construction stays valid)
    setcut: Bound | None = None  # bounds.setcut: rank sets

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topology": self.topology, "collective": self.collective, "ranks": self.ranks,
                               "chunks": self.chunks}
        for name in ("steps", "rounds", "receive", "cut", "lp", "hops", "holdings", "setcut", "rounds_per_chunk",
                     "throughput", "time"):
            b = getattr(self, name)
            if b is not None:
                out[name] = b.to_json()
        return out


def fraction_json(x: Fraction) -> float:
    return round(float(x), 6)
