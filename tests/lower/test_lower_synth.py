"""Synthesized schedules lower to XML that verifies, in every mode and with 1, 2 and 4 instances (a
representative subset of the synthesis benchmark set; `benchmarks/lower_all.py` runs the whole set)."""

from functools import cache
from pathlib import Path

import pytest
from test_lower import MODES, lower_and_verify

from smtcoll import library
from smtcoll.lower import LowerOptions, lower_to_file
from smtcoll.msccl.reader import read_program_bytes
from smtcoll.msccl.runtime import MAX_DEPID
from smtcoll.synth.exact import strategies

CASES = [
    ("ring:4", "allgather", None, 1), ("dgx1", "allgather", None, 2), ("star:4", "alltoall", None, 1),
    ("line:4", "allreduce", None, 1), ("ring:4", "reducescatter", None, 1), ("ring:4", "broadcast", 2, 1),
    ("dgx1", "reduce", 0, 1), ("hub-and-spoke:4", "allgather", None, 1), ("ring:4", "allreduce", None, 4),
]


@cache
def synthesized(topo: str, coll: str, root: int | None, chunks: int):
    t = library.topology(topo)
    result = strategies.least_steps(t, library.collective(coll, t.ranks, root), chunks=chunks)
    assert result.status == "found"
    return result.schedule


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[1]}-{c[0]}-C{c[3]}")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("instances", [1, 2, 4])
def test_synthesized_schedules_lower_and_verify(case, mode, instances, tmp_path: Path) -> None:
    schedule = synthesized(*case)
    runtime = "executor" if case[1] == "reducescatter" else "auto"  # spelled differently per runtime
    lowered, _ = lower_and_verify(schedule, tmp_path, mode=mode, instances=instances, runtime=runtime)
    if case[1] == "reducescatter":
        lower_and_verify(schedule, tmp_path, mode=mode, instances=instances, runtime="legacy")
    else:
        assert lowered.runtimes == ("executor", "legacy")


def test_waited_for_thread_blocks_are_numbered_first_to_fit_depid(tmp_path: Path) -> None:
    """depid is an int8_t: the tree packing of a DGX-2 Allgather with 4 instances has 140 thread blocks on
    rank 0, 112 of them waited for; numbered first they fit (the program verifies). With 8 instances (2
    channels each) 224 are waited for, as many thread blocks as every connection spread over both channels
    opens; with its light connections on one channel (`spread.fitted_segments`) 112, and it verifies."""
    from smtcoll.synth.constructions import constructions

    topo = library.topology("dgx2")
    tree = next(c for c in constructions(topo, library.collective("allgather", 16)) if c.name == "treepack").schedule
    summary, _ = lower_to_file(tree, tmp_path / "a.xml", LowerOptions(4, "Simple", "executor"))
    program = read_program_bytes((tmp_path / "a.xml").read_bytes(), "a.xml").program
    assert summary["written"] and max(len(g.tbs) for g in program.gpus) == 140
    depids = {s.depid for g in program.gpus for t in g.tbs for s in t.steps if s.depid is not None}
    assert max(depids) <= MAX_DEPID < max(t.id or 0 for g in program.gpus for t in g.tbs)
    summary, _ = lower_to_file(tree, tmp_path / "b.xml", LowerOptions(8, "Simple", "executor"))
    program = read_program_bytes((tmp_path / "b.xml").read_bytes(), "b.xml").program
    waited = max(len({s.depid for t in g.tbs for s in t.steps if s.depid is not None and s.depid >= 0})
                 for g in program.gpus)
    assert summary["written"] and program.nchannels == 16 and waited == 112
