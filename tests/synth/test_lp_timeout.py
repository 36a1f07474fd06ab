"""`--timeout` bounds the LPs too (issue 24): HiGHS gets the time left of the request, and a result an LP
stopped says so (`stopped_by`, exit 3), with the schedule the engine still found."""

from __future__ import annotations

from smtcoll import specs
from smtcoll.bounds import lp
from smtcoll.synth.door import synthesize
from smtcoll.synth.request import Limits, SynthRequest


def test_a_tiny_timeout_stops_the_routing_lp_and_the_result_says_so() -> None:
    # a100 x 4 Alltoall: the routing LP alone takes seconds of HiGHS (20,000 variables)
    topo = specs.resolve_topology("a100", 4)
    coll = specs.resolve_collective("alltoall", topo.ranks, None, 1)
    r = synthesize(topo, coll, SynthRequest(limits=Limits(timeout=0.001)))
    assert r.status == "timeout" and r.stopped_by == "time"
    assert "stopped" in r.message and "LP" in r.message
    assert r.schedule is not None  # the engine's other methods still answer, checked
    assert r.to_json()["stopped_by"] == "time"


def test_without_a_timeout_nothing_is_stopped() -> None:
    topo = specs.resolve_topology("ring:8", 1)
    coll = specs.resolve_collective("alltoall", topo.ranks, None, 1)
    r = synthesize(topo, coll, SynthRequest(method="scale"))
    assert r.status == "found" and not r.stopped_by


def test_solve_gets_the_time_left_and_counts_what_it_stops() -> None:
    import numpy as np

    with lp.time_limit(-1.0) as d:  # already passed: not even started
        res = lp.solve(np.array([1.0]), np.array([[-1.0]]), np.array([-1.0]))
    assert res.status == lp.TIME_LIMIT_STATUS and res.value is None and d.stopped == 1
    with lp.time_limit(60.0) as d:  # a small LP within its time: solved, nothing counted
        res = lp.solve(np.array([1.0]), np.array([[-1.0]]), np.array([-1.0]))
    assert res.status == 0 and res.value == 1.0 and d.stopped == 0 and d.what() == ""
    assert lp.deadline() is None  # the limit ends with its block


def test_searches_the_time_limit_skips_are_named_and_the_engine_still_answers() -> None:
    # 6 nodes of 4 GPUs on a ring with a NIC each, one-address Allreduce: after the engine, the door's symmetric
    # search for sums would run; with the time already up it does not, and the result says so (exit 3)
    from smtcoll import library
    from smtcoll.check.schedule import check_schedule
    from smtcoll.model import Nic, Topology

    ring = library.generate("ring", [4])
    topo = Topology("ring4nic", 4, ring.links, ring.switches, [Nic([k], [k], 1, 0) for k in range(4)]).compose(6)
    coll = library.collective("allreduce", topo.ranks)
    r = synthesize(topo, coll, SynthRequest(limits=Limits(timeout=0.001)))
    assert r.status == "timeout" and r.stopped_by == "time"
    assert "the time limit (--timeout) stopped" in r.message and "search(es) of the synthesizer" in r.message
    assert r.schedule is not None and check_schedule(r.schedule).verdict == "ok"
