"""The one finding type and the one capped collector every check uses (smtcoll/findings.py)."""

from __future__ import annotations

from smtcoll.findings import MAX_LISTED, Finding, capped, summary


def test_cap_counts_each_code_and_severity_apart() -> None:
    items = [Finding("race", f"r{i}", "warning") for i in range(25)] + [Finding("race", f"e{i}") for i in range(22)]
    out = capped(items)
    assert [f.message for f in out if f.more] == ["... and 5 more race finding(s)", "... and 2 more race finding(s)"]
    assert {(f.severity, f.more) for f in out if f.more} == {("warning", 5), ("error", 2)}
    # each summary comes right after the last listed finding of its kind
    warn = [i for i, f in enumerate(out) if f.severity == "warning"]
    assert out[warn[-1]].more == 5 and len(warn) == MAX_LISTED + 1


def test_capping_twice_is_capping_once() -> None:
    items = [Finding("not-held", f"n{i}") for i in range(50)]
    once = capped(items)
    assert capped(once) == once
    shorter = [*once[:5], summary("not-held", "error", 45)]
    assert capped(shorter) == shorter


def test_the_json_of_a_finding_is_the_verify_contract() -> None:
    f = Finding("race", "m", "warning", {"tb": 1, "gpu": 0}, frozenset({"legacy"}), more=0)
    assert f.to_json() == {"code": "race", "severity": "warning", "message": "m", "where": {"gpu": 0, "tb": 1}}
    assert f.place() == "gpu 0, tb 1"
