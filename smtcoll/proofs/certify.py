"""Certificates for the claims a synthesis result rests on: each infeasible point it pruned."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from smtcoll.errors import InternalError, SmtcollError
from smtcoll.model import Collective, Topology
from smtcoll.proofs.certificate import ClaimRefuted, write_certificate
from smtcoll.proofs.claim import Claim


class PrunedPoint(Protocol):
    """What a certificate needs of a point the synthesizer pruned (`smtcoll.synth.result.Point`)."""

    @property
    def status(self) -> str: ...
    @property
    def chunks(self) -> int: ...
    @property
    def claim(self) -> tuple[int | None, int | None] | None: ...


def certify(pruned: Iterable[PrunedPoint], topo: Topology, base: Collective, out_dir: Path) -> list[dict[str, Any]]:
    """A certificate for each claim a pruned point rests on, written into `out_dir`; a claim the proof
    tools cannot establish (a solver's time limit) is listed with the reason, never hidden.

    Raises `InternalError` (exit 70) when a claim is refuted: the synthesizer pruned a point that has a schedule."""
    out = []
    for p in pruned:
        if p.status != "infeasible" or p.claim is None:
            continue
        claim, coll = Claim(*p.claim), base.with_chunks(max(1, p.chunks))
        entry: dict[str, Any] = {"claim": claim.text(topo, coll), "file": None}
        try:
            entry["file"] = str(write_certificate(claim, topo, coll, out_dir))
        except ClaimRefuted as e:
            raise InternalError(f"the synthesizer pruned a point that has a schedule: {e}") from None
        except SmtcollError as e:
            entry["why"] = str(e)
        out.append(entry)
    return out
