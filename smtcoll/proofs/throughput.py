"""Throughput certificates: "every schedule takes T(B) >= us_per_byte * B", written and re-checked.

The proof is the time bound's certificate (`smtcoll.bounds.throughput`): a cut, a count of transfers,
or the lengths of the flow LP's dual. The check recomputes it in exact arithmetic from the certificate's
topology and collective (`smtcoll.bounds.witness.recheck_throughput`), trusting none of its numbers and
running no LP solver; a changed number anywhere makes it fail.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from smtcoll import specs
from smtcoll.errors import ModelError, SmtcollError
from smtcoll.files import write_text
from smtcoll.model import Collective, Topology
from smtcoll.proofs.certificate import FORMAT, BadProof, CheckResult, check_data, sha256_json


def claim_text(topo: Topology, coll: Collective, us_per_byte: Fraction, gbps_per_unit: Fraction) -> str:
    root = f" (root {coll.root})" if coll.root is not None else ""
    return (f"every {coll.name}{root} schedule on {topo.name} takes at least {us_per_byte} us per byte of the "
            f"buffer (links at their own GB/s, {gbps_per_unit} GB/s per bandwidth unit where a link has none)")


def certificate_name(topo: Topology, coll: Collective) -> str:
    root = f"-root{coll.root}" if coll.root is not None else ""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"throughput-{coll.name}{root}-{topo.name}")


def write_throughput_certificate(topo: Topology, coll: Collective, out_dir: Path | str, *,
                                 gbps_per_unit: float = 25.0, name: str | None = None) -> Path:
    """Prove the time bound and write `<name>.json` into out_dir; returns its path."""
    from smtcoll.bounds.throughput import fraction_text, time_bound

    b = time_bound(topo, coll, gbps_per_unit)
    if b.certificate is None:
        raise ModelError("collective", f"{coll.name} on {topo.name}: no time bound to certify ({b.witness})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    topo_d, coll_d = specs.topology_to_dict(topo), specs.collective_to_dict(coll)
    cert = {"format": FORMAT, "method": "throughput",
            "claim": {"text": claim_text(topo, coll, b.us_per_byte, b.gbps_per_unit),
                      "us_per_byte": fraction_text(b.us_per_byte), "gbps_per_unit": fraction_text(b.gbps_per_unit)},
            "witness": b.certificate.to_json(),
            "topology_sha256": sha256_json(topo_d), "collective_sha256": sha256_json(coll_d),
            "topology": topo_d, "collective": coll_d}
    path = out / f"{name or certificate_name(topo, coll)}.json"
    write_text(path, json.dumps(cert, indent=2) + "\n")
    return path


def check_throughput(file: str, data: dict[str, Any]) -> CheckResult:
    """Re-check a throughput certificate (already read as JSON with the right format)."""
    claim = data.get("claim")
    stated = claim.get("text", "") if isinstance(claim, dict) else ""
    try:
        topo = specs.topology_from_dict(data.get("topology"))
        coll = specs.collective_from_dict(data.get("collective"))
    except SmtcollError as e:
        return CheckResult(file, "unusable", stated, "throughput", [f"cannot rebuild the certificate's data: {e}"])
    try:
        check_data(data, topo, coll)
        if not isinstance(claim, dict):
            raise BadProof("the claim is missing")
        try:
            us_per_byte = Fraction(str(claim["us_per_byte"]))
            gbps = Fraction(str(claim["gbps_per_unit"]))
        except (KeyError, ValueError, ZeroDivisionError) as e:
            raise BadProof(f"the claim's us_per_byte and gbps_per_unit must be fractions: {e}") from None
        if gbps <= 0:
            raise BadProof("gbps_per_unit must be > 0")
        if stated != claim_text(topo, coll, us_per_byte, gbps):
            raise BadProof(f"the claim's text {stated!r} does not say what its fields say (edited claim)")
        from smtcoll.bounds.witness import recheck_throughput

        try:
            proved = recheck_throughput(data.get("witness"), topo, coll, gbps)
        except ModelError as e:
            raise BadProof(f"the witness does not check: {e}") from None
        if proved != us_per_byte:
            raise BadProof(f"the witness proves {proved} us per byte, the claim says {us_per_byte}")
    except BadProof as e:
        return CheckResult(file, "error", stated, "throughput", [str(e)])
    kind = data["witness"]["bound"]
    return CheckResult(file, "ok", stated, "throughput",
                       [f"recomputed the {kind} bound exactly: T(B) >= {us_per_byte} us/byte x B "
                        f"({float(1 / us_per_byte / 1000):g} GB/s algorithm bandwidth at most)"])
