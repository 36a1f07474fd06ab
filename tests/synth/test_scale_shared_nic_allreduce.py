"""One-chunk Allreduce where two GPUs share a NIC and every GPU of a node is linked to every other (issue 24,
session 12; pairs8 x 3 was tuned on, this 4-GPU machine was not): the node sums in one step, the relay windows
over the NICs, the reach bound counting each shared NIC once. The schedule is checked, within 1.5x of the bound,
and the bound's witness is recomputed and a changed number caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtcoll import library, specs
from smtcoll.bounds import check_witness, reach_bound
from smtcoll.check.schedule import check_schedule
from smtcoll.synth.scale import windows_allreduce

PAIRS4 = """
[topology]
name = "pairs4"
ranks = 4
links = [
""" + "".join(f"    {{ src = {u}, dst = {v}, bandwidth = 1 }},\n" for u in range(4) for v in range(4) if u != v) + """]
[[topology.nics]]
senders = [0, 1]
receivers = [0, 1]
bandwidth = 1
rail = 0
[[topology.nics]]
senders = [2, 3]
receivers = [2, 3]
bandwidth = 1
rail = 1
"""


def test_shared_nics_within_one_and_a_half_of_the_reach_bound(tmp_path: Path) -> None:
    path = tmp_path / "pairs4.toml"
    path.write_text(PAIRS4)
    topo = specs.load_topology(path, 3)
    coll = library.collective("allreduce", topo.ranks)
    b = reach_bound(topo, coll)
    # 2 NICs bring 2 values a round into a node (the ranks' own links from other nodes: 16): after 2 rounds a
    # rank holds at most 4 + 5 + 2 = 11 of the 12 contributions
    assert b.value == 3 and b.witness["reach"] == [1, 5, 11, 12]
    assert check_witness("reach", {"bound": "reach", **b.witness}, topo, coll) == 3
    with pytest.raises(Exception, match="reach"):
        check_witness("reach", {"bound": "reach", **b.witness, "reach": [1, 5, 12, 12]}, topo, coll)
    s = windows_allreduce.windows_allreduce(topo, coll)
    assert s is not None and check_schedule(s).verdict == "ok"
    assert len(s.steps) == 4 <= 1.5 * b.value  # 1 step of node sums, 2 of relayed windows, 1 of copies
