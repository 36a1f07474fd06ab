"""The list scheduler under the tree constructions (`synth/constructions/pipeline.py`): the backward pass of
forward-backward list scheduling keeps every transfer, its dependencies and the links' lanes, and packs the
end of the schedule."""

from __future__ import annotations

from collections import Counter

from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Schedule, Step
from smtcoll.synth.constructions.forest import _plan, choose, pack
from smtcoll.synth.constructions.pipeline import Plan, backward, schedule_transfers


def _placed(plan: Plan, steps: list[Step]) -> dict[int, int]:
    """Transfer index -> its step (a chunk crosses a link once in these plans)."""
    where = {(x.chunk, x.src, x.dst): s for s, st in enumerate(steps) for x in st.sends}
    return {i: where[(t.chunk, t.src, t.dst)] for i, t in enumerate(plan.transfers)}


def test_backward_keeps_transfers_dependencies_and_lanes() -> None:
    topo = library.topology("mi250")
    roots = list(range(16))
    c, m, _ = choose(topo, roots, 1)
    plan = _plan(roots, pack(topo, roots, c, m), c)
    forward = schedule_transfers(topo, plan, deep=True)
    late = backward(topo, plan, forward)
    assert Counter(x for st in late for x in st.sends) == Counter(x for st in forward for x in st.sends)
    step = _placed(plan, late)
    assert len(step) == len(plan.transfers)
    for i, t in enumerate(plan.transfers):
        assert all(step[d] < step[i] for d in t.after)  # a forward leaves with what arrived before its step
    for st in late:
        lanes = Counter((x.src, x.dst) for x in st.sends)
        assert all(n <= topo.bandwidth(*link) for link, n in lanes.items())
    # the end is packed: the forward pass's last step is a few relays' forwards, the backward pass's is full
    # on every link of the cut into ranks 0,1 (the bound's busiest lanes)
    assert len(late) == len(forward) == 30
    assert len(late[-1].sends) > 3 * len(forward[-1].sends)
    coll = library.collective("allgather", 16).with_chunks(c)
    assert check_schedule(Schedule(topo, coll, late, name="forest")).verdict == "ok"


def test_backward_runs_each_transfer_as_late_as_the_links_after_it_allow() -> None:
    """On the line 0-1-2: chunk 1 goes 0 -> 1 -> 2, chunk 0 only 0 -> 1, listed first. Forward, chunk 0
    takes link 0 -> 1 first and chunk 1's two hops follow: 3 steps, the last one a single transfer. Backward,
    chunk 1's second hop is placed last and everything else as late as it can go: 2 steps."""
    topo = library.topology("line:3")
    plan = Plan()
    plan.add(0, 0, 1)
    first = plan.add(1, 0, 1)
    plan.add(1, 1, 2, [first])
    forward = schedule_transfers(topo, plan)
    assert [sorted((x.chunk, x.src, x.dst) for x in st.sends) for st in forward] == [
        [(0, 0, 1)], [(1, 0, 1)], [(1, 1, 2)]]
    late = backward(topo, plan, forward)
    assert [sorted((x.chunk, x.src, x.dst) for x in st.sends) for st in late] == [
        [(1, 0, 1)], [(0, 0, 1), (1, 1, 2)]]
