"""The order in which the contributions to one sum are chained (`lower/storage.py`, `_by_arrival`): every
`rrc` into a value waits for the one before it, so the lowering chains them in the order their messages are
expected to arrive, not in the order the schedule lists them (docs/lower.md, "Transfers")."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.lower import Lowered, LowerOptions, lower, verify_lowered
from smtcoll.model import Topology
from smtcoll.msccl.writer import write_program
from smtcoll.sweep.cost import Model, machine, predict
from smtcoll.sweep.tasks import model_bound
from smtcoll.synth.constructions.forest import forest

SIZE = 256 << 20


def _share(topo: Topology, kind: str, low: Lowered) -> float:
    """The sweep's bound over the lowered program's time in the sweep's model, at 256 MiB."""
    model = Model.load()
    curve = predict(low.program, machine(topo, 1, model), model, SIZE, SIZE)
    assert curve is not None
    bound = model_bound(topo, library.collective(kind, topo.ranks), 1, model)(SIZE)
    return float(bound / curve.at(SIZE))


def test_amd8_reducescatter_chains_its_sums_in_arrival_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """amd8 ReduceScatter, `forest` with 27 trees per root at 8 instances: each root adds 7 peers'
    contributions into every output chunk. Chained in arrival order the program times 0.98 of the bound
    and verifies for both runtimes (within 4096 XML nodes a rank); chained in the schedule's order, a
    contribution sent 20th on its connection holds the chain and the others' links idle: 0.937."""
    topo = library.topology("amd8")
    sched = forest(topo, library.collective("reducescatter", 8))
    assert sched.collective.chunk_factor == 27
    options = LowerOptions(8, "Simple", "auto", "outofplace", SIZE, SIZE)
    low = lower(sched, options)
    out = tmp_path / "rs.xml"
    out.write_text(write_program(low.program))
    ok, report = verify_lowered(low, out)
    assert ok, report.violations[:3]
    assert _share(topo, "reducescatter", low) >= 0.97

    import smtcoll.lower.storage as storage

    monkeypatch.setattr(storage, "_by_arrival", lambda here, speed: here)  # the schedule's order
    assert _share(topo, "reducescatter", lower(sched, options)) < 0.95


def test_a_step_that_replaces_then_adds_keeps_that_order(tmp_path: Path) -> None:
    """Only additions commute. The exact search's ndv2 x2 Allreduce with 2 chunks has steps where a rank takes
    a sum that contains what it holds and adds another into the same address; chained by arrival alone the
    addition went first and the take overwrote it (the lowered program did not verify, at any instance count)."""
    from smtcoll.lower.transfers import transfers
    from smtcoll.synth.door import synthesize
    from smtcoll.synth.request import SynthRequest

    topo = library.topology("ndv2", 2)
    result = synthesize(topo, library.collective("allreduce", 16, chunks=2), SynthRequest(method="exact"))
    assert result.schedule is not None
    sched = result.schedule
    items = transfers(sched)
    replaced = {(x.step, x.dst, x.addr) for x in items if x.action == "replace"}
    assert any((x.step, x.dst, x.addr) in replaced for x in items if x.action == "add")
    for instances in (1, 4):
        low = lower(sched, LowerOptions(instances, "Simple", "auto", "outofplace", SIZE, SIZE))
        probe = tmp_path / f"ar{instances}.xml"
        probe.write_text(write_program(low.program))
        ok, report = verify_lowered(low, probe)
        assert ok, report.to_json()
