"""`auto`'s default work budget is spent in shares, one per step count (door._exact_search, Clock.share):
one hard count cannot eat the whole budget, and the answer still does not depend on the machine's load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smtcoll import specs
from smtcoll.synth.door import _exact_search, synthesize
from smtcoll.synth.request import DEFAULT_WORK, QUERY_WORK, Limits, SynthRequest

PCIE2S8 = Path(__file__).resolve().parents[2] / "benchmarks" / "topologies" / "heldout" / "pcie2s8.toml"
BURN = "import time\nend = time.time() + 120\nwhile time.time() < end:\n    pass\n"


def _same(data: dict) -> dict:
    """A result's JSON without what measures the machine (seconds)."""
    data = {k: v for k, v in data.items() if k not in ("seconds", "files")}
    data["attempts"] = [{k: v for k, v in a.items() if k != "seconds"} for a in data["attempts"]]
    return data


def _reducescatter() -> dict:
    # without the set cuts (bounds/setcut.py), which prove 5 here (the exact optimum) and leave no hard count:
    # the instance keeps a first count that is hard to refute, what these tests need
    from smtcoll.bounds import Bound

    topo = specs.resolve_topology(str(PCIE2S8))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("smtcoll.bounds.search.setcut_bound", lambda t, c: Bound("setcut", None, "rounds", {}, "off"))
        result = synthesize(topo, specs.resolve_collective("reducescatter", topo.ranks))
    return _same(result.to_json())


@pytest.fixture(scope="module")
def idle() -> dict:
    return _reducescatter()


def test_a_hard_step_count_leaves_the_budget_to_the_next(idle: dict) -> None:
    # 4 steps (the bound) takes 7.1 M units to refute; with the whole budget on one question, 5 (3.4 M
    # units) ran out and the answer was the engine's 6. Now 4 is undecided within its share, 5 is found.
    assert idle["status"] == "found" and idle["steps"] == 5 and idle["stopped_by"] == "budget"
    assert idle["optimal"] == {"proved": False, "steps_at_least": 4, "steps_at_most": 5}
    assert idle["work"] <= DEFAULT_WORK
    asked = [a for a in idle["attempts"] if a["method"] in ("dual", "direct")]
    assert [a["steps"] for a in asked if a["verdict"] == "budget"] == [4]
    assert asked[-1]["steps"] == 5 and asked[-1]["verdict"] == "sat"


def test_the_shares_give_the_same_answer_on_a_loaded_machine(idle: dict) -> None:
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        loaded = _reducescatter()
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert loaded == idle


@pytest.mark.parametrize(("request_", "share"), [
    (SynthRequest(), QUERY_WORK),
    (SynthRequest(limits=Limits(work=DEFAULT_WORK)), None),  # a budget the user gives is one pool
    (SynthRequest(method="exact"), None),  # --method exact: one question may spend all of it, as before
])
def test_only_autos_default_budget_is_shared(request_: SynthRequest, share: int | None) -> None:
    with _exact_search(request_, shared=True) as clock:
        assert clock.share == share and clock.work == DEFAULT_WORK
    with _exact_search(request_) as clock:
        assert clock.share is None
