"""Writing certificates, and checking them again without trusting the writer.

A certificate is a JSON file (format below, `docs/proofs.md`) holding the claim, the topology and
collective in explicit form with their sha256 hashes, and the proof: a bound witness (re-checked by
recomputing the bound from the witness's choice of chunk, rank or cut), or an SMT-LIB2 file next to it
(re-checked by regenerating the formula from the claim, comparing bytes, and solving it with z3 and
with cvc5: both must answer unsat).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from smtcoll import specs
from smtcoll.errors import LimitReached, ModelError, SmtcollError, Wrong
from smtcoll.files import write_text
from smtcoll.model import Collective, Topology
from smtcoll.proofs.claim import Claim
from smtcoll.proofs.encoding import ENCODER, encode
from smtcoll.proofs.solvers import DEFAULT_TIMEOUT_S, SolverRun, solve_all
from smtcoll.vocabulary import CertificateVerdict

if TYPE_CHECKING:
    from smtcoll import bounds

FORMAT = "smtcoll-certificate/1"


class ClaimRefuted(Wrong):
    """The solver found a schedule within the budget: the claim is false."""


class NotProved(LimitReached):
    """Neither a bound nor the solvers (within the time limit) prove the claim."""


def sha256_json(data: Any) -> str:
    """The hash of the canonical JSON form (sorted keys, no spaces): independent of file layout."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def certificate_name(claim: Claim, topo: Topology, coll: Collective) -> str:
    root = f"-root{coll.root}" if coll.root is not None else ""
    s = "any" if claim.steps is None else str(claim.steps)
    r = "any" if claim.rounds is None else str(claim.rounds)
    raw = f"{coll.name}{root}-{topo.name}-C{coll.chunk_factor}-S{s}-R{r}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw)


def refuting_bound(claim: Claim, topo: Topology, coll: Collective) -> tuple[str, bounds.Bound] | None:
    """The first bound (steps, receive, cut, holdings, entry, relay, cycle, reach, inflow, ports, rails, hubs, summed,
    setcut)
    that rules the claim's budget out, if any."""
    from smtcoll import bounds  # networkx and scipy: imported when a bound is needed

    net = bounds.flow_network(topo)
    steps = bounds.distance_bound(topo, coll)
    budget = min(x for x in (claim.steps, claim.rounds) if x is not None)  # rounds >= steps
    if _beats(steps.value, steps.note, budget):
        return "steps", steps
    if claim.rounds is None:
        return None
    for b in (bounds.receive_bound(topo, coll, net), bounds.cut_bound(topo, coll, net),
              bounds.holdings_bound(topo, coll), bounds.entry_bound(topo, coll), bounds.relay_bound(topo, coll),
              bounds.cycle_bound(topo, coll), bounds.reach_bound(topo, coll), bounds.inflow_bound(topo, coll),
              bounds.ports_bound(topo, coll), bounds.rails_bound(topo, coll), bounds.hubs_bound(topo, coll),
              bounds.summed_bound(topo, coll), bounds.setcut_bound(topo, coll)):
        if _beats(b.value, b.note, claim.rounds):
            return b.name, b
    return None


def _beats(value: int | float | None, note: str, budget: int) -> bool:
    return (value is None and note.endswith("no schedule exists")) or (value is not None and value > budget)


def _header(claim: Claim, topo: Topology, coll: Collective) -> list[str]:
    return [f"smtcoll certificate formula: {claim.text(topo, coll)}",
            f"topology sha256 {sha256_json(specs.topology_to_dict(topo))}",
            f"collective sha256 {sha256_json(specs.collective_to_dict(coll))}"]


def write_certificate(claim: Claim, topology: Topology, collective: Collective, out_dir: Path | str, *,
                      name: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Path:
    """Prove the claim and write `<name>.json` (and `<name>.smt2` for an SMT proof) into out_dir.

    A bound witness is used when one rules the budget out, else the SMT encoding solved by z3 and
    cvc5. Raises ClaimRefuted when a solver finds a schedule,
    NotProved when no proof is found within the time limit. Returns the certificate's path."""
    topo, coll = topology, collective
    if topo.ranks != coll.ranks:
        raise ModelError("collective", f"has {coll.ranks} ranks but the topology has {topo.ranks}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = name or certificate_name(claim, topo, coll)
    topo_d, coll_d = specs.topology_to_dict(topo), specs.collective_to_dict(coll)
    cert: dict[str, Any] = {"format": FORMAT, "claim": claim.to_json(topo, coll)}
    found = refuting_bound(claim, topo, coll)
    if found is not None:
        kind, b = found
        cert["method"] = "bound"
        cert["witness"] = {"bound": kind, "value": b.value, **b.witness}
    else:
        enc = encode(topo, coll, claim, _header(claim, topo, coll))
        smt_path = out / f"{name}.smt2"
        smt_path.write_text(enc.text)
        verdicts = solve_all(smt_path, timeout_s)
        broken = [v for v in verdicts if v.verdict == "error"]
        if broken:
            smt_path.unlink()
            raise SmtcollError("; ".join(f"{v.solver} could not run: {v.reason}" for v in broken))
        if any(v.verdict == "sat" for v in verdicts):
            smt_path.unlink()
            raise ClaimRefuted(f"the claim is false: {', '.join(v.solver for v in verdicts if v.verdict == 'sat')} "
                               f"found a schedule ({claim.text(topo, coll)})")
        if not all(v.verdict == "unsat" for v in verdicts):
            smt_path.unlink()
            why = "; ".join(f"{v.solver}: {v.verdict} {v.reason}".strip() for v in verdicts if v.verdict != "unsat")
            raise NotProved(f"not proved within {timeout_s:g} s ({why}): {claim.text(topo, coll)}")
        cert["method"] = "smt"
        cert["smt"] = {"file": smt_path.name, "sha256": hashlib.sha256(enc.text.encode()).hexdigest(),
                       "encoder": ENCODER, "verdicts": [v.to_json(timing=False) for v in verdicts]}
    cert["topology_sha256"] = sha256_json(topo_d)
    cert["collective_sha256"] = sha256_json(coll_d)
    cert["topology"] = topo_d
    cert["collective"] = coll_d
    path = out / f"{name}.json"
    write_text(path, json.dumps(cert, indent=2) + "\n")
    return path


# --- checking ------------------------------------------------------------------------------------

def _strs(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


def _runs(items: Iterable[SolverRun]) -> tuple[SolverRun, ...]:
    return tuple(items)


@attrs.frozen
class CheckResult:
    """`verdict`: ok (the claim holds), error (the certificate does not prove its claim), unusable
    (it cannot be read, or a solver could not run), timeout (everything checks, but a solver gave no
    answer within the time limit: the claim is not re-proved, and nothing shows it wrong either)."""

    file: str
    verdict: CertificateVerdict
    claim: str = ""
    method: str = ""
    messages: tuple[str, ...] = attrs.field(default=(), converter=_strs)
    solvers: tuple[SolverRun, ...] = attrs.field(default=(), converter=_runs)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "verdict": self.verdict, "claim": self.claim, "method": self.method,
                "messages": list(self.messages), "solvers": [v.to_json() for v in self.solvers]}


class BadProof(Exception):
    """The certificate does not prove its claim (verdict error)."""


class _TimedOut(Exception):
    """A solver answered unknown (its time limit, or it gave up): no verdict on the certificate."""


def check_certificate(path: Path | str, timeout_s: float = DEFAULT_TIMEOUT_S) -> CheckResult:
    """Re-check one certificate from scratch; never raises for bad input."""
    path = Path(path)
    file = str(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        return CheckResult(file, "unusable", messages=[f"cannot read: {e}"])
    except json.JSONDecodeError as e:
        return CheckResult(file, "unusable", messages=[f"not JSON: line {e.lineno}: {e.msg}"])
    except RecursionError:
        return CheckResult(file, "unusable", messages=["JSON nested too deeply"])
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return CheckResult(file, "unusable", messages=[f"not a certificate (expected \"format\": \"{FORMAT}\")"])
    if data.get("method") == "throughput":  # a time bound, not a step/round claim: its own checker
        from smtcoll.proofs.throughput import check_throughput

        return check_throughput(file, data)
    try:
        topo = specs.topology_from_dict(data.get("topology"))
        coll = specs.collective_from_dict(data.get("collective"))
        claim = Claim.from_json(data.get("claim"))
    except SmtcollError as e:
        return CheckResult(file, "unusable", messages=[f"cannot rebuild the certificate's data: {e}"])
    method = str(data.get("method", ""))
    stated = data["claim"].get("text", "") if isinstance(data.get("claim"), dict) else ""
    notes: list[str] = []
    solvers: list[SolverRun] = []
    try:
        check_data(data, topo, coll)
        if stated != claim.text(topo, coll):
            raise BadProof(f"the claim's text {stated!r} does not say what its fields say: "
                         f"{claim.text(topo, coll)!r} (edited claim)")
        if data["claim"].get("chunks") != coll.chunk_factor:
            raise BadProof(f"the claim says C={data['claim'].get('chunks')} but the collective has "
                         f"C={coll.chunk_factor} (edited claim)")
        if method == "bound":
            notes.append(_check_bound(data.get("witness"), claim, topo, coll))
        elif method == "smt":
            notes += _check_smt(path, data.get("smt"), claim, topo, coll, timeout_s, solvers)
        else:
            raise BadProof(f"unknown method {method!r} (expected bound or smt)")
    except BadProof as e:
        return CheckResult(file, "error", stated, method, [*notes, str(e)], solvers)
    except _Unusable as e:
        return CheckResult(file, "unusable", stated, method, [*notes, str(e)], solvers)
    except _TimedOut as e:
        return CheckResult(file, "timeout", stated, method, [*notes, str(e), _answers(solvers)], solvers)
    return CheckResult(file, "ok", stated, method, notes, solvers)


class _Unusable(Exception):
    pass


def check_data(data: dict[str, Any], topo: Topology, coll: Collective) -> None:
    """The topology and collective are the ones hashed, in the explicit form smtcoll writes."""
    for key, explicit in (("topology", specs.topology_to_dict(topo)),
                          ("collective", specs.collective_to_dict(coll))):
        if data.get(f"{key}_sha256") != sha256_json(data[key]):
            raise BadProof(f"the {key} does not match {key}_sha256 (edited {key} or hash)")
        if sha256_json(explicit) != data[f"{key}_sha256"]:
            raise BadProof(f"the {key} is not in the explicit form smtcoll writes (it does not round-trip)")
    if topo.ranks != coll.ranks:
        raise BadProof(f"the collective has {coll.ranks} ranks but the topology has {topo.ranks}")


def _check_bound(witness: Any, claim: Claim, topo: Topology, coll: Collective) -> str:
    if not isinstance(witness, dict) or "bound" not in witness:
        raise BadProof("the witness is missing or has no \"bound\" kind")
    kind = witness["bound"]
    try:
        from smtcoll import bounds

        value = bounds.check_witness(kind, witness, topo, coll)
    except ModelError as e:
        raise BadProof(f"the witness does not check: {e}") from None
    if value is None:
        raise BadProof(f"the {kind} witness proves no bound")
    if value != witness.get("value") and not (value >= 10**9 and witness.get("value") is None):
        raise BadProof(f"the {kind} witness proves {value}, but the certificate records {witness.get('value')}")
    unit = "step(s)" if kind == "steps" else "round(s)"
    if kind == "steps":
        budget = min(x for x in (claim.steps, claim.rounds) if x is not None)
    elif claim.rounds is None:
        raise BadProof(f"a {kind} bound limits rounds, but the claim bounds only the steps")
    else:
        budget = claim.rounds
    if value <= budget:
        raise BadProof(f"the {kind} witness proves at least {value} {unit}, which does not rule out a budget of "
                     f"{budget}")
    what = "impossible (unreachable)" if value >= 10**9 else f">= {value} {unit}"
    return f"recomputed {kind} bound from the witness: {what} > budget {budget}"


def _check_smt(cert_path: Path, smt: Any, claim: Claim, topo: Topology, coll: Collective, timeout_s: float,
               solvers: list[SolverRun]) -> list[str]:
    if not isinstance(smt, dict) or not isinstance(smt.get("file"), str):
        raise BadProof("the smt section is missing or names no file")
    if Path(smt["file"]).name != smt["file"]:
        raise BadProof(f"the formula file {smt['file']!r} must sit next to the certificate (a bare file name)")
    smt_path = cert_path.parent / smt["file"]
    try:
        text = smt_path.read_bytes()
    except OSError as e:
        raise _Unusable(f"cannot read the formula {smt_path}: {e}") from None
    if hashlib.sha256(text).hexdigest() != smt.get("sha256"):
        raise BadProof(f"the formula {smt['file']} does not match its recorded sha256 (edited formula or hash)")
    try:
        expected = encode(topo, coll, claim, _header(claim, topo, coll)).text.encode()
    except ModelError as e:
        raise BadProof(f"the claim cannot be encoded: {e}") from None
    if text != expected:
        raise BadProof(f"the formula {smt['file']} is not the encoding of this claim ({ENCODER} regenerates a "
                     "different formula from the certificate's topology, collective and claim)")
    notes = [f"{smt['file']} is the encoding of the claim ({ENCODER}), sha256 matches"]
    solvers.extend(solve_all(smt_path, timeout_s))
    for v in solvers:
        if v.verdict == "error":
            raise _Unusable(f"{v.solver} could not run: {v.reason}")
    sat = [v.solver for v in solvers if v.verdict == "sat"]
    if sat:
        raise BadProof(f"{' and '.join(sat)} find(s) the formula satisfiable: a schedule exists, the claim is false")
    # both must answer unsat; a solver that gives up proves nothing either way (verdict timeout, exit 3)
    unknown = [v.solver for v in solvers if v.verdict != "unsat"]
    if unknown:
        proved = ", ".join(f"{v.solver}: unsat" for v in solvers if v.verdict == "unsat")
        raise _TimedOut(f"not re-proved within {timeout_s:g} s by {' and '.join(unknown)}"
                        + (f" ({proved})" if proved else ""))
    notes.append(_answers(solvers))
    return notes


def _answers(solvers: Iterable[SolverRun]) -> str:
    """Each solver's version, answer (and why it gave no answer) and time, for the report."""
    return ", ".join(f"{v.solver} {v.version}: {v.verdict}" + (f" [{v.reason}]" if v.verdict == "unknown" and v.reason
                     else "") + f" ({v.seconds:.2f} s)" for v in solvers)


def certificate_files(paths: list[Path]) -> list[Path]:
    """Certificates named by the paths: files as given, directories searched for *.json (sorted)."""
    out: list[Path] = []
    for p in paths:
        out += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    return out


