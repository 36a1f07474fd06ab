"""One-address Allreduce on 2n nodes lifted from a schedule on n (synth/scale/lift.py, issue 24, session 14): two
copies of the n-node schedule and one exchange per GPU with its twin n nodes away, inserted into its own
timeline. Machines written here (switch nodes with a NIC per GPU or per GPU pair), not the held-out files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

import smtcoll
from smtcoll import library, specs
from smtcoll.bounds import search_bounds
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.exact.sums import sums_schedule
from smtcoll.synth.scale import lift


def _switch(tmp_path: Path, gpus: int, share: int) -> Path:
    """`gpus` GPUs on one switch (a port of one chunk a round), a NIC per `share` GPUs, a rail each."""
    text = f'[topology]\nname = "sw{gpus}x{share}"\ngenerator = "hub-and-spoke:{gpus}"\n'
    for r in range(gpus // share):
        nic = list(range(share * r, share * r + share))
        text += f"\n[[topology.nics]]\nsenders = {nic}\nreceivers = {nic}\nbandwidth = 1\nrail = {r}\n"
    path = tmp_path / f"sw{gpus}x{share}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("gpus", "share", "half_steps", "bound"), [(4, 1, 3, 3), (12, 2, 5, 4)])
def test_lifted_from_half_the_nodes(tmp_path: Path, gpus: int, share: int, half_steps: int, bound: int) -> None:
    # a NIC per GPU (h100's shape) and per GPU pair (nvl36's); the engine's lanes take 7 on the second
    path = _switch(tmp_path, gpus, share)
    topo = specs.load_topology(path, 4)
    coll = library.collective("allreduce", topo.ranks)
    half = lift.half_machine(topo)
    assert half is not None and half.ranks == topo.ranks // 2
    two = specs.load_topology(path, 2)  # the first two nodes are the machine of two nodes
    links = [sorted((l.src, l.dst, l.bandwidth) for l in t.links) for t in (half, two)]
    assert links[0] == links[1]
    hcoll = lift.half_collective(coll, half.ranks)
    found, _, _ = sums_schedule(half, hcoll, search_bounds(half, hcoll).least_steps(True, 1), half_steps + 1,
                                30_000_000, None)
    assert found is not None and len(found.steps) == half_steps
    s = lift.lift_nodes(topo, coll, found)
    assert s is not None and check_schedule(s).verdict == "ok"
    assert len(s.steps) == half_steps + 1  # one exchange with the twin per GPU, in a round of its own
    assert search_bounds(topo, coll).least_steps(True, 1) == bound and len(s.steps) <= 1.5 * bound
    # the twins' exchange is the only traffic between the copies
    h = half.ranks
    across = {(x.src, x.dst) for st in s.steps for x in st.sends if (x.src < h) != (x.dst < h)}
    assert across == {(v, v + h) for v in range(h)} | {(v + h, v) for v in range(h)}


def test_no_lift_where_it_does_not_apply(tmp_path: Path) -> None:
    three = specs.load_topology(_switch(tmp_path, 4, 1), 3)
    assert lift.half_machine(three) is None  # an odd node count
    topo = specs.load_topology(_switch(tmp_path, 4, 1), 4)
    coll = library.collective("allreduce", topo.ranks)
    other = specs.load_topology(_switch(tmp_path, 4, 1), 3)
    wrong = smtcoll.synthesize(other, "allreduce", method="scale").schedule
    assert wrong is not None
    assert lift.lift_nodes(topo, coll, wrong) is None  # not half of this machine


@pytest.mark.slow  # about 7 CPU s: the symmetric search on 2 nodes of 36 GPUs
def test_synth_lifts_on_36_gpus_with_pair_nics(tmp_path: Path) -> None:
    # nvl36's shape: the symmetric search is too large on 4 nodes (about 87,000 constraints); on 2 it finds 6
    # steps, lifted to 7 where the engine's lanes take 9 (bound 6 since session 18, the summed bound; was 5)
    topo = specs.load_topology(_switch(tmp_path, 36, 2), 4)
    r = smtcoll.synthesize(topo, "allreduce")
    assert r.schedule is not None and len(r.schedule.steps) == 7 and "lifted" in r.method
    assert check_schedule(r.schedule).verdict == "ok"
    bounds = search_bounds(topo, library.collective("allreduce", topo.ranks))
    assert bounds.least_steps(True, 1) == 6 and bounds.summed is not None and bounds.summed.value == 6


def _one_rail(tmp_path: Path, gpus: int) -> Path:
    """`gpus` GPUs in a ring, a NIC each, all on one rail: every GPU reaches every GPU of the other nodes (mi250's
    NIC shape on a small node)."""
    text = f'[topology]\nname = "ring{gpus}nic"\ngenerator = "ring:{gpus}"\n'
    for r in range(gpus):
        text += f"\n[[topology.nics]]\nsenders = [{r}]\nreceivers = [{r}]\nbandwidth = 1\nrail = 0\n"
    path = tmp_path / f"ring{gpus}nic.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("make", "m", "k", "windows"), [(_one_rail, 2, 3, 2), (_one_rail, 2, 5, 3),
                                                          (lambda t, g: _switch(t, g, 1), 2, 4, 2)])
def test_lifted_to_groups(tmp_path: Path, make: Callable[[Path, int], Path], m: int, k: int, windows: int) -> None:
    # k groups of m nodes each run the m-node schedule, then windows of groups double or split across the NICs:
    # every GPU ends with the total, ceil(log2 k) steps after the m-node schedule
    path = make(tmp_path, 4)
    topo = specs.load_topology(path, m * k)
    coll = library.collective("allreduce", topo.ranks)
    sub = lift.sub_machine(topo, m)
    assert sub is not None and sub.ranks == m * 4
    alone = specs.load_topology(path, m)  # the first m nodes are the machine of m nodes
    assert sorted((l.src, l.dst) for l in sub.links) == sorted((l.src, l.dst) for l in alone.links)
    scoll = lift.half_collective(coll, sub.ranks)
    found, _, _ = sums_schedule(sub, scoll, search_bounds(sub, scoll).least_steps(True, 1), 6, 30_000_000, None)
    assert found is not None
    s = lift.lift_groups(topo, coll, found)
    assert s is not None and check_schedule(s).verdict == "ok"
    assert len(s.steps) == len(found.steps) + windows
    # the windows are the only traffic between the groups, at most one NIC value into and out of a GPU a round,
    # and every GPU takes the last one
    h = sub.ranks
    for st in s.steps[len(found.steps):]:
        assert all(x.src // h != x.dst // h for x in st.sends)
        for ends in ([x.src for x in st.sends], [x.dst for x in st.sends]):
            assert len(ends) == len(set(ends))
    assert sorted(x.dst for x in s.steps[-1].sends) == list(range(topo.ranks))
    short = attrs.evolve(s, steps=s.steps[:-1])  # without the last window: no GPU holds the total
    assert check_schedule(short).verdict != "ok"


def test_no_groups_where_they_do_not_apply(tmp_path: Path) -> None:
    six = specs.load_topology(_one_rail(tmp_path, 4), 6)
    assert lift.group_rounds(six, 3) is None  # two groups: the twins' exchange of lift_nodes
    assert lift.group_rounds(six, 4) is None  # 4 does not divide 6
    assert lift.group_rounds(six, 2) is not None
    rails = specs.load_topology(_switch(tmp_path, 4, 1), 6)
    assert lift.group_rounds(rails, 2) is not None  # a GPU's halves: itself in the group's other node (its rail)
    assert lift.group_rounds(rails, 1) is None  # 6 = 2 x 3 groups of one node: no second GPU on a rail
    pairs = specs.load_topology(_switch(tmp_path, 4, 2), 8)
    assert lift.group_rounds(pairs, 2) is None  # GPUs sharing a NIC cannot all send across at once
    coll = library.collective("allreduce", six.ranks)
    three = smtcoll.synthesize(specs.load_topology(_one_rail(tmp_path, 4), 3), "allreduce", method="scale").schedule
    assert three is not None and lift.lift_groups(six, coll, three) is None  # two groups

def test_synth_mi250_nine_nodes_in_six_steps() -> None:
    # issue 24: mi250 x 9 in 6 (the engine's 7). The lift (4 steps on 3 nodes, two rounds of windows over the 3
    # groups, 20 CPU s) gave it first; the spread (synth/exact/spread.py, about 3 CPU s) now answers before it
    topo = library.topology("mi250", 9)
    r = smtcoll.synthesize(topo, "allreduce")
    assert r.schedule is not None and len(r.schedule.steps) == 6 and "spread" in r.method
    assert check_schedule(r.schedule).verdict == "ok"
    assert search_bounds(topo, library.collective("allreduce", topo.ranks)).least_steps(True, 1) == 4


def test_the_lift_also_takes_a_half_found_at_its_own_bound(tmp_path: Path) -> None:
    # 3-cube nodes with a NIC per GPU, one rail, 6 nodes: the engine 5 steps for the bound 3; the search on 3
    # nodes finds their bound, 3 (3.6 M units), which lifts to 4. The search on half the nodes was tried only for
    # 1.5x its bound (4 here, no better than the engine once lifted). A budget of 5 M units keeps the search on
    # all 6 nodes, which finds nothing first, short (the default: 14 CPU s, the same answer)
    from smtcoll.synth.door import synthesize
    from smtcoll.synth.request import Limits, SynthRequest

    text = '[topology]\nname = "cube8"\ngenerator = "hypercube:3"\n'
    text += "".join(f"\n[[topology.nics]]\nsenders = [{g}]\nreceivers = [{g}]\n" for g in range(8))
    (tmp_path / "cube8.toml").write_text(text)
    topo = specs.load_topology(tmp_path / "cube8.toml", 6)
    result = synthesize(topo, library.collective("allreduce", topo.ranks), SynthRequest(limits=Limits(work=5_000_000)))
    assert result.schedule is not None and check_schedule(result.schedule).verdict == "ok"
    assert len(result.schedule.steps) == 4 and result.method == "exact: symmetric sums on half the nodes, lifted"
    assert result.gap is not None and result.gap.steps_bound == 3
