"""The checker's whole-step path for copy collectives gives the same report as the send-by-send walk."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smtcoll import library
from smtcoll.check import schedule as checker
from smtcoll.model import Schedule, Send, Step

TOPOLOGIES = ["ring:4", "line:4", "torus2d:2x3", "star:5"]
COLLECTIVES = ["allgather", "alltoall", "broadcast", "gather", "scatter"]


@st.composite
def schedules(draw):
    topo = library.topology(draw(st.sampled_from(TOPOLOGIES)))
    coll = library.collective(draw(st.sampled_from(COLLECTIVES)), topo.ranks)
    links = [(link.src, link.dst) for link in topo.links]
    send = st.one_of(
        st.tuples(st.integers(0, coll.chunks), st.sampled_from(links)).map(lambda t: Send(t[0], *t[1])),
        st.builds(Send, st.integers(0, coll.chunks + 2), st.integers(0, topo.ranks - 1),
                  st.integers(0, topo.ranks - 1)),
    )
    steps = draw(st.lists(st.builds(Step, st.integers(1, 2), st.lists(send, max_size=12)), max_size=8))
    return Schedule(topo, coll, steps)


def _report(schedule, whole_steps):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checker, "WHOLE_STEPS", whole_steps)
        report = checker.check_schedule(schedule)
    return report.violations, report.metrics


@settings(max_examples=300, deadline=None)
@given(schedules())
def test_whole_step_path_reports_as_the_walk(schedule):
    assert _report(schedule, True) == _report(schedule, False)


def test_a_correct_schedule_passes_whole_steps():
    from smtcoll.synth.scale.translate import translate_schedule

    topo = library.topology("torus2d:4x4")
    found = translate_schedule(topo, library.collective("allgather", 16))
    assert found is not None
    violations, metrics = _report(found[0], True)
    assert not violations and metrics["sends"] == 16 * 15
    broken = Schedule(topo, found[0].collective, found[0].steps[:-1])
    assert {v.code for v in _report(broken, True)[0]} == {"postcondition"}
