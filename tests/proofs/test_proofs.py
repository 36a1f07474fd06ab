"""Certificates: the encoder agrees with the checker both ways, and `smtcoll proof check` rejects what
does not prove its claim (edited claim, wrong hash, a satisfiable formula)."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import z3
from helpers.random_schedules import (
    accepted_combining_schedules,
    accepted_schedules,
    all_combining_schedules,
    all_schedules,
    arrive,
    combining_collectives,
    mutated,
    starts,
    topologies,
    valid_order,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtcoll import library, specs
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step
from smtcoll.proofs import Claim, ClaimRefuted, check_certificate, write_certificate
from smtcoll.proofs.certificate import _header, refuting_bound, sha256_json
from smtcoll.proofs.encoding import arrival_order, encode

ROOT = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smtcoll", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def solve(text: str, extra: dict[str, bool] | None = None) -> tuple[z3.CheckSatResult, dict[str, bool]]:
    solver = z3.Solver()
    solver.from_string(text)
    for name, value in (extra or {}).items():
        v = z3.Bool(name)
        solver.add(v if value else z3.Not(v))
    result = solver.check()
    if result != z3.sat:
        return result, {}
    model = solver.model()
    return result, {d.name(): z3.is_true(model[d]) for d in model.decls()}


# --- the encoder, both ways ----------------------------------------------------------------------


def assert_decodes_within_budget(enc, model, steps, rounds):
    """A model decodes to a schedule the checker accepts, within the claim's budget."""
    schedule = enc.decode(model)
    report = check_schedule(schedule)
    assert report.verdict == "ok", [v.message for v in report.violations]
    assert len(schedule.steps) <= steps
    assert rounds is None or schedule.rounds <= rounds

@FAST
@given(st.data())
def test_every_model_decodes_to_a_schedule_the_checker_accepts(data):
    topo = data.draw(topologies())
    pre = data.draw(starts(topo.ranks))
    chunks = 1 + max(c for _, c in pre)
    post = data.draw(st.lists(st.tuples(st.integers(0, topo.ranks - 1), st.integers(0, chunks - 1)),
                              min_size=1, unique=True))
    coll = Collective("random", topo.ranks, chunks, pre, post, list(range(chunks)))
    steps = data.draw(st.integers(1, 3))
    rounds = data.draw(st.one_of(st.none(), st.integers(steps, steps + 3)))
    claim = Claim(steps, rounds)
    enc = encode(topo, coll, claim)
    result, model = solve(enc.text)
    if refuting_bound(claim, topo, coll) is not None:
        assert result == z3.unsat  # a bound that rules the budget out agrees with the solver
    if result == z3.sat:
        assert_decodes_within_budget(enc, model, steps, rounds)


@FAST
@given(st.data())
def test_every_accepted_schedule_satisfies_the_encoding(data):
    schedule = data.draw(accepted_schedules())
    assert check_schedule(schedule).verdict == "ok"
    topo, coll = schedule.topology, schedule.collective
    for claim in (Claim(len(schedule.steps), schedule.rounds), Claim(len(schedule.steps) + 1, None),
                  Claim(None, schedule.rounds)):
        enc = encode(topo, coll, claim)
        result, _ = solve(enc.text, enc.assignment(schedule))
        assert result == z3.sat, claim


@FAST
@given(st.data())
def test_the_encoding_accepts_exactly_what_the_checker_accepts(data):
    """On schedules one change away from correct, checker verdict == satisfiability with the schedule
    fixed (sends outside the links or duplicated cannot be written as an assignment, and are skipped)."""
    schedule = data.draw(mutated(data.draw(accepted_schedules())))
    topo, coll = schedule.topology, schedule.collective
    if any(not topo.has_link(s.src, s.dst) for step in schedule.steps for s in step.sends):
        return
    enc = encode(topo, coll, Claim(len(schedule.steps), schedule.rounds))
    result, _ = solve(enc.text, enc.assignment(schedule))
    assert (result == z3.sat) == (check_schedule(schedule).verdict == "ok")


@pytest.mark.parametrize("name,chunks_of,steps,rounds", [
    ("line:3", "allgather", 1, 1), ("line:3", "allgather", 2, 2), ("line:3", "allgather", 2, 3),
    ("ring:3", "allgather", 1, 1), ("ring:3", "allgather", 1, 2), ("star:3", "allgather", 2, 3),
    ("star:3", "allgather", 2, 4), ("line:3", "broadcast", 2, 2), ("hub-and-spoke:3", "allgather", 1, 2),
    ("hub-and-spoke:3", "allgather", 2, 2), ("line:3", "gather", 2, 2), ("line:3", "gather", 2, 3),
])
def test_unsat_means_the_enumerator_finds_no_schedule(name, chunks_of, steps, rounds):
    topo = library.topology(name)
    coll = library.collective(chunks_of, topo.ranks, 0 if chunks_of in ("broadcast", "gather") else None)
    exists = any(check_schedule(s).verdict == "ok" for s in all_schedules(topo, coll, steps, rounds))
    result, _ = solve(encode(topo, coll, Claim(steps, rounds)).text)
    assert (result == z3.sat) == exists


# --- combining collectives: arrivals in some order, both ways ------------------------------------

def _arrival_rules(current: frozenset, values: list[frozenset]) -> bool:
    """The encoder's four arrival rules, in Python (the formula states them over Booleans)."""
    def meets(u, v):
        return bool(u & v)

    loaded = [meets(v, current) or any(w <= v for j, w in enumerate(values) if j != i) for i, v in enumerate(values)]
    pairs = [(i, j) for i in range(len(values)) for j in range(i + 1, len(values))]
    return (all(not meets(v, current) or current <= v for v in values)
            and all(not meets(values[i], values[j]) or values[i] <= values[j] or values[j] <= values[i]
                    for i, j in pairs)
            and all(not loaded[i] or not current or meets(v, current) for i, v in enumerate(values))
            and all(not (loaded[i] and loaded[j]) or meets(values[i], values[j]) for i, j in pairs))


def test_the_arrival_rules_hold_exactly_when_some_order_is_accepted():
    """Exhaustively over 3 contributions and up to 3 arrivals: the rules hold iff some order of the
    arrivals passes the checker's copy-or-reduce rule, and `arrival_order` then gives such an order."""
    sets = [frozenset(c for c in range(3) if m >> c & 1) for m in range(8)]
    for current in sets:
        for k in range(1, 4):
            for values in itertools.product(sets[1:], repeat=k):
                arrivals = list(enumerate(values))
                rules = _arrival_rules(current, list(values))
                assert rules == (valid_order(current, arrivals) is not None), (current, values)
                if rules:
                    cur = current
                    for src in arrival_order(current, arrivals):
                        cur = arrive(cur, values[src])
                        assert cur is not None, (current, values)


def test_a_fixed_arrival_order_would_lose_schedules():
    """Why the encoder quantifies over orders: {1} receiving {1,2} then {2} double counts; {2} first is fine."""
    current, arrivals = frozenset({1}), [(0, frozenset({1, 2})), (1, frozenset({2}))]
    assert arrive(arrive(current, arrivals[0][1]), arrivals[1][1]) is None
    assert valid_order(current, arrivals) == [1, 0]
    assert arrival_order(current, arrivals) == [1, 0]


@FAST
@given(st.data())
def test_every_combining_model_decodes_to_a_schedule_the_checker_accepts(data):
    topo = data.draw(topologies())
    base = data.draw(combining_collectives(topo.ranks))
    post = data.draw(st.lists(st.tuples(st.integers(0, topo.ranks - 1), st.integers(0, base.chunks - 1)),
                              min_size=1, unique=True))
    coll = Collective("random", topo.ranks, base.chunks, base.pre, post, base.address)
    steps = data.draw(st.integers(1, 3))
    rounds = data.draw(st.one_of(st.none(), st.integers(steps, steps + 3)))
    enc = encode(topo, coll, Claim(steps, rounds))
    result, model = solve(enc.text)
    if result == z3.sat:
        assert_decodes_within_budget(enc, model, steps, rounds)


@FAST
@given(st.data())
def test_every_accepted_combining_schedule_satisfies_the_encoding(data):
    schedule = data.draw(accepted_combining_schedules())
    assert check_schedule(schedule).verdict == "ok"
    topo, coll = schedule.topology, schedule.collective
    for claim in (Claim(len(schedule.steps), schedule.rounds), Claim(len(schedule.steps) + 1, None)):
        enc = encode(topo, coll, claim)
        result, _ = solve(enc.text, enc.assignment(schedule))
        assert result == z3.sat, claim


@FAST
@given(st.data())
def test_the_combining_encoding_accepts_exactly_what_the_checker_accepts_in_some_order(data):
    """On combining schedules one change away from correct, satisfiability with the schedule fixed ==
    the checker accepts the schedule with each step's arrivals in some order (found by brute force)."""
    schedule = data.draw(mutated(data.draw(accepted_combining_schedules())))
    topo, coll = schedule.topology, schedule.collective
    if any(not topo.has_link(s.src, s.dst) or s.chunk not in coll.addresses
           for step in schedule.steps for s in step.sends):
        return
    values: dict = {}
    for r, c in coll.pre:
        values[(r, coll.address[c])] = values.get((r, coll.address[c]), frozenset()) | {c}
    steps = []
    for step in schedule.steps:
        ordered, new = [], dict(values)
        for d, a in sorted({(s.dst, s.chunk) for s in step.sends}):
            group = [s for s in step.sends if (s.dst, s.chunk) == (d, a)]
            arrivals = [(s.src, values.get((s.src, a), frozenset())) for s in group]
            order = valid_order(values.get((d, a), frozenset()), arrivals)
            ordered += [Send(a, src, d) for src in order] if order is not None else group
            new[(d, a)] = values.get((d, a), frozenset()).union(*(v for _, v in arrivals))
        steps.append(Step(step.rounds, ordered))
        values = new
    reordered = Schedule(topo, coll, steps, "reordered")
    enc = encode(topo, coll, Claim(len(schedule.steps), schedule.rounds))
    result, _ = solve(enc.text, enc.assignment(schedule))
    assert (result == z3.sat) == (check_schedule(reordered).verdict == "ok")


@pytest.mark.parametrize("name,chunks_of,steps", [
    ("line:3", "allreduce", 1), ("line:3", "allreduce", 2), ("ring:3", "allreduce", 1), ("star:3", "allreduce", 1),
    ("star:3", "allreduce", 2), ("line:3", "reduce", 1), ("line:3", "reduce", 2), ("ring:3", "reducescatter", 1),
    ("line:3", "reducescatter", 2), ("hub-and-spoke:3", "allreduce", 2),
])
def test_combining_unsat_means_the_enumerator_finds_no_schedule(name, chunks_of, steps):
    topo = library.topology(name)
    coll = library.collective(chunks_of, topo.ranks, 0 if chunks_of == "reduce" else None)
    exists = any(check_schedule(s).verdict == "ok" for s in all_combining_schedules(topo, coll, steps))
    result, _ = solve(encode(topo, coll, Claim(steps, None)).text)
    assert (result == z3.sat) == exists


def test_the_formula_has_one_comment_per_constraint_family():
    text = encode(library.topology("ring:3"), library.collective("allgather", 3), Claim(2, 2)).text
    families = [line for line in text.splitlines() if line.startswith("; --- ")]
    assert [f.split(":")[0] for f in families] == [
        "; --- variables", "; --- precondition", "; --- causality", "; --- holding", "; --- rounds",
        "; --- round budget", "; --- link bandwidth", "; --- switch groups", "; --- postcondition"]


def test_the_combining_formula_has_one_comment_per_constraint_family():
    text = encode(library.topology("ring:3"), library.collective("allreduce", 3), Claim(2, 2)).text
    families = [line for line in text.splitlines() if line.startswith("; --- ")]
    assert [f.split(":")[0] for f in families] == [
        "; --- variables", "; --- precondition", "; --- causality", "; --- arrivals", "; --- value", "; --- rounds",
        "; --- round budget", "; --- link bandwidth", "; --- switch groups", "; --- postcondition"]


# --- certificates ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("proofs")
    topo = library.topology("dgx1")
    return {
        "smt": write_certificate(Claim(2, 4), topo, library.collective("allgather", 8, chunks=3), out),
        "steps": write_certificate(Claim(1, None), topo, library.collective("allgather", 8), out),
        "receive": write_certificate(Claim(6, 6), library.topology("star:8"), library.collective("allgather", 8), out),
        "cut": write_certificate(Claim(None, 15), library.topology("line:8"), library.collective("alltoall", 8), out),
    }


def _edit(src: Path, tmp: Path, change) -> Path:
    dst = tmp / src.name
    for f in src.parent.glob(src.stem + ".*"):
        shutil.copy(f, tmp / f.name)
    data = json.loads(dst.read_text())
    change(data)
    dst.write_text(json.dumps(data, indent=2))
    return dst


def test_written_certificates_check(certs):
    for kind, path in certs.items():
        result = check_certificate(path)
        assert result.verdict == "ok", (kind, result.messages)
        assert result.method == ("smt" if kind == "smt" else "bound")
    smt = check_certificate(certs["smt"])
    assert [v.solver for v in smt.solvers] == ["z3", "cvc5"]
    assert all(v.verdict == "unsat" for v in smt.solvers)


def test_certificate_holds_explicit_data_and_hashes(certs):
    data = json.loads(certs["smt"].read_text())
    assert data["claim"] == {"text": "no allgather schedule on dgx1 with C=3 chunk(s) per input finishes in at most "
                                     "2 step(s) and at most 4 round(s)", "steps": 2, "rounds": 4, "chunks": 3}
    assert data["topology_sha256"] == sha256_json(specs.topology_to_dict(library.topology("dgx1")))
    smt_file = certs["smt"].parent / data["smt"]["file"]
    assert data["smt"]["sha256"] == hashlib.sha256(smt_file.read_bytes()).hexdigest()
    assert [v["solver"] for v in data["smt"]["verdicts"]] == ["z3", "cvc5"]


def test_writing_is_deterministic(certs, tmp_path):
    again = write_certificate(Claim(2, 4), library.topology("dgx1"), library.collective("allgather", 8, chunks=3),
                              tmp_path)
    assert again.read_bytes() == certs["smt"].read_bytes()
    assert again.with_suffix(".smt2").read_bytes() == certs["smt"].with_suffix(".smt2").read_bytes()


def test_a_false_claim_is_refused_by_the_writer(tmp_path):
    with pytest.raises(ClaimRefuted, match="the claim is false"):
        write_certificate(Claim(2, 2), library.topology("ring:4"), library.collective("allgather", 4), tmp_path)
    assert not list(tmp_path.iterdir())  # no formula is left behind


@pytest.mark.parametrize("which,change,message", [
    ("smt", lambda d: d["claim"].update(steps=3), "edited claim"),
    ("smt", lambda d: d["claim"].update(text=d["claim"]["text"].replace("2 step", "3 step")), "edited claim"),
    ("smt", lambda d: d["claim"].update(chunks=6), "edited claim"),
    ("smt", lambda d: d.update(topology_sha256="0" * 64), "topology does not match topology_sha256"),
    ("smt", lambda d: d["collective"].update(chunk_factor=2), "collective does not match"),
    ("smt", lambda d: d["smt"].update(sha256="0" * 64), "does not match its recorded sha256"),
    ("steps", lambda d: d["witness"].update(value=3), "records 3"),
    ("steps", lambda d: d["claim"].update(steps=2, text=d["claim"]["text"].replace("1 step", "2 step")),
     "does not rule out a budget of 2"),
    ("receive", lambda d: d["witness"].update(rank=0, value=1), "does not rule out"),
    ("cut", lambda d: d["witness"].update(inside=[0, 1, 2, 3, 4, 5, 6, 7]), "proper subset"),
    ("steps", lambda d: d.update(method="magic"), "unknown method"),
])
def test_corrupted_certificates_are_wrong(certs, tmp_path, which, change, message):
    result = check_certificate(_edit(certs[which], tmp_path, change))
    assert result.verdict == "error"
    assert message in " ".join(result.messages)


def _forge(tmp_path: Path, claim: Claim, text: str | None = None, topology: str = "ring:4") -> Path:
    """A certificate whose formula is consistent with its claim and hashes, for claims that are false."""
    topo = library.topology(topology)
    coll = library.collective("allgather", topo.ranks)
    formula = text if text is not None else encode(topo, coll, claim, _header(claim, topo, coll)).text
    (tmp_path / "forged.smt2").write_text(formula)
    cert = {"format": "smtcoll-certificate/1", "claim": claim.to_json(topo, coll), "method": "smt",
            "smt": {"file": "forged.smt2", "sha256": hashlib.sha256(formula.encode()).hexdigest(),
                    "encoder": "smtcoll.proofs.encoding/1", "verdicts": []},
            "topology_sha256": sha256_json(specs.topology_to_dict(topo)),
            "collective_sha256": sha256_json(specs.collective_to_dict(coll)),
            "topology": specs.topology_to_dict(topo), "collective": specs.collective_to_dict(coll)}
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(cert))
    return path


def test_a_satisfiable_formula_is_wrong(tmp_path):
    result = check_certificate(_forge(tmp_path, Claim(2, 2)))  # Ring(4) Allgather fits 2 steps of one round
    assert result.verdict == "error"
    assert "satisfiable: a schedule exists, the claim is false" in " ".join(result.messages)
    assert {v.solver: v.verdict for v in result.solvers}["z3"] == "sat"


def test_a_formula_that_is_not_the_claims_encoding_is_wrong(tmp_path):
    result = check_certificate(_forge(tmp_path, Claim(1, 1), "(set-logic QF_LIA)\n(assert false)\n(check-sat)\n"))
    assert result.verdict == "error"
    assert "is not the encoding of this claim" in " ".join(result.messages)
    assert not result.solvers  # never solved: a trivially unsat file proves nothing


def _solvers_answer(monkeypatch, **answers: str) -> None:
    """Replace each named solver by one that answers as given (unknown: it gave up at its time limit)."""
    from smtcoll.proofs import solvers

    for name, answer in answers.items():
        monkeypatch.setitem(solvers.SOLVERS, name, lambda path, t, name=name, answer=answer: solvers.SolverRun(
            name, "test", answer, t, "timeout" if answer == "unknown" else ""))


def test_a_solver_that_gives_up_is_a_timeout_not_a_wrong_certificate(certs, monkeypatch):
    _solvers_answer(monkeypatch, cvc5="unknown")
    result = check_certificate(certs["smt"], timeout_s=5)
    assert result.verdict == "timeout"
    assert "not re-proved within 5 s by cvc5 (z3: unsat)" in result.messages
    assert [(v.solver, v.verdict) for v in result.solvers] == [("z3", "unsat"), ("cvc5", "unknown")]
    assert result.to_json()["verdict"] == "timeout"
    _solvers_answer(monkeypatch, z3="unknown")
    assert "not re-proved within 5 s by z3 and cvc5" in check_certificate(certs["smt"], timeout_s=5).messages


def test_a_time_out_does_not_hide_a_wrong_certificate(certs, tmp_path, monkeypatch):
    _solvers_answer(monkeypatch, cvc5="unknown")
    edited = check_certificate(_edit(certs["smt"], tmp_path, lambda d: d["claim"].update(steps=3)))
    assert edited.verdict == "error"  # caught before any solving
    _solvers_answer(monkeypatch, z3="sat")
    refuted = check_certificate(certs["smt"])
    assert refuted.verdict == "error" and "the claim is false" in " ".join(refuted.messages)


def test_cli_reports_a_time_out_with_exit_3():
    # cvc5 needs tens of seconds on this certificate, so 1 s is a time-out on any machine
    out = cli("proof", "check", str(ROOT / "proofs" / "allgather-dgx1-C5-S2-R7.json"), "--timeout", "1")
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout.startswith("timeout: ")
    assert "not re-proved within 1 s by " in out.stdout and "cvc5" in out.stdout
    assert "1 certificate(s): 0 ok, 0 wrong, 0 unusable, 1 timeout" in out.stdout
    js = cli("proof", "check", str(ROOT / "proofs" / "allgather-dgx1-C5-S2-R7.json"), "--timeout", "1",
             "--format", "json")
    assert js.returncode == 3 and [r["verdict"] for r in json.loads(js.stdout)] == ["timeout"]


def test_cli_exit_codes(certs, tmp_path):
    ok = cli("proof", "check", str(certs["steps"]), str(certs["cut"]), "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert [r["verdict"] for r in json.loads(ok.stdout)] == ["ok", "ok"]
    wrong = cli("proof", "check", str(_edit(certs["steps"], tmp_path, lambda d: d.update(topology_sha256="x"))))
    assert wrong.returncode == 1 and "wrong:" in wrong.stdout and "topology_sha256" in wrong.stdout
    (tmp_path / "bad.json").write_text("{not json")
    bad = cli("proof", "check", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "unusable" in bad.stdout and "not JSON" in bad.stdout
    missing = cli("proof", "check", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr


def test_cli_reports_each_solver(certs):
    out = cli("proof", "check", str(certs["smt"]))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "z3 " in out.stdout and "cvc5 " in out.stdout and "unsat" in out.stdout


@pytest.mark.slow
def test_shipped_proofs_check():
    """No shipped certificate is wrong or unusable. A solver that runs out of time on a loaded machine is
    a time-out (exit 3), not a failure of the proofs; a wrong certificate still fails (exit 1)."""
    out = cli("proof", "check", str(ROOT / "proofs"), "--format", "json")
    verdicts = {r["file"]: r["verdict"] for r in json.loads(out.stdout)}
    assert len(verdicts) == len(list((ROOT / "proofs").rglob("*.json")))
    assert set(verdicts.values()) <= {"ok", "timeout"}, out.stdout
    assert out.returncode == (3 if "timeout" in verdicts.values() else 0), out.stderr
