"""The concurrent flow LP by sink, where the demands have fewer sinks than sources (Gather).

Commodities that all end at one rank t are one commodity: the sum of their flows satisfies the capacity rows
and conservation (supplies at the sources, the total into t), and conversely any such flow decomposes into
paths, each from one source to t, which is a flow per source. So the LP with one commodity per sink has the
same optimum and the same capacity rows, hence valid dual lengths. It is solved on the reversed topology,
where each sink is the single source of its commodity (`lp.concurrent_flow`'s form), and the lengths of the
reversed links are mapped back. Gather to one rank of a 72-GPU, 2-node machine: 71 commodities -> 1, the whole
`bounds` command 20-25 -> 2.9 CPU s (docs/benchmarks.md, "Bounds on switch machines (session 12)").

The flows of the reversed problem are per sink, not per source, so the solution carries none: the bounds use
only the optimum and the lengths (re-checked exactly by `throughput.lengths_certificate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from smtcoll.model import Topology

if TYPE_CHECKING:
    from smtcoll.bounds.lp import Commodity, FlowSolution, Method


def sink_commodities(commodities: Sequence[Commodity]) -> dict[int, dict[int, Fraction]] | None:
    """Per sink, the demand from each source; None unless every commodity has one source and the sinks are
    fewer than the commodities (else grouping by source is as small)."""
    by_sink: dict[int, dict[int, Fraction]] = {}
    for c in commodities:
        if len(c.sources) != 1:
            return None
        (s,) = c.sources
        for v, d in c.demand.items():
            if d:
                row = by_sink.setdefault(v, {})
                row[s] = row.get(s, Fraction(0)) + d
    return by_sink if len(by_sink) < len(commodities) else None


def sink_flow(topo: Topology, commodities: Sequence[Commodity], link_cap: Sequence[Fraction],
              group_cap: Sequence[Fraction], method: Method = "highs") -> FlowSolution | None:
    """`concurrent_flow`'s optimum and lengths from one commodity per sink (module docstring), flows
    omitted; None where that is not smaller (the caller solves by source) or the LP is infeasible."""
    from smtcoll.bounds.lp import Commodity, FlowSolution, concurrent_flow

    by_sink = sink_commodities(commodities)
    if by_sink is None:
        return None
    rev = topo.reversed()
    index = {(l.src, l.dst): e for e, l in enumerate(rev.links)}
    to_rev = [index[l.dst, l.src] for l in topo.links]  # original link e is reversed link to_rev[e]
    rev_cap = [Fraction(0)] * len(topo.links)
    for e, c in enumerate(link_cap):
        rev_cap[to_rev[e]] = c
    coms = [Commodity(frozenset([t]), dict(sorted(d.items()))) for t, d in sorted(by_sink.items())]
    sol = concurrent_flow(rev, coms, rev_cap, group_cap, method=method)  # groups keep their order
    if sol is None:
        return None
    return FlowSolution(sol.value, tuple(sol.link_lengths[to_rev[e]] for e in range(len(topo.links))),
                        sol.group_lengths, ())
