"""The one LP layer: HiGHS (scipy.optimize.linprog) behind `solve`, the concurrent flow LP on the flow
network (`concurrent_flow`, with its dual lengths), and the flow LP bound on rounds (`lp_bound`).

`concurrent_flow` aggregates commodities by their set of sources (all demands of one source set are one
commodity: exact for the min-congestion LP, since a flow from a source set decomposes into paths to each
sink), so Alltoall on P ranks has P commodities instead of P^2: ndv2 x4 and a100 x2 solve in well under
a second. The bounds turn its dual into an exact certificate (`smtcoll.bounds.throughput`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

import attrs

from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology

# the multicast LP (per chunk and needing rank) grows faster than linearly in HiGHS: 1.4 s at 45,000
# variables (a100 x 2 Allgather), 5.7 s at 59,000 (ndv2 x 3), 12.9 s at 143,000 (ndv2 x 4), 65 s at 207,000
# (a100 x 3), each time below the receive or entry bound; beyond this `bounds` says it was not computed
MULTICAST_LP_MAX_VARIABLES = 60_000


@attrs.frozen
class LPResult:
    """What HiGHS answered: `status` 0 optimal, 2 infeasible, else no answer (`message`). `ineq_duals`
    and `eq_duals` are the marginals of the constraints (d objective / d right-hand side)."""

    status: int
    value: float | None
    x: tuple[float, ...] = ()
    ineq_duals: tuple[float, ...] = ()
    eq_duals: tuple[float, ...] = ()
    message: str = ""


def _put(rows: list[int], cols: list[int], vals: list[float], r: int, c: int, v: float) -> None:
    """One coefficient of a sparse constraint matrix in coordinate form."""
    rows.append(r)
    cols.append(c)
    vals.append(v)


def _sparse(vals: list[float], rows: list[int], cols: list[int], shape: tuple[int, int]) -> Any:
    """The constraint matrix of coefficients in coordinate form, as HiGHS takes it (CSR)."""
    import numpy as np
    from scipy.sparse import coo_matrix

    v = np.asarray(vals, dtype=np.float64)
    r, c = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    return coo_matrix((v, (r, c)), shape=shape).tocsr()


class Deadline:
    """The wall-clock stop (`--timeout`) every LP solved within `time_limit` obeys, and whether one was
    stopped by it (the caller reports that: a bound or a routing computed without that LP is weaker)."""

    def __init__(self, at: float | None) -> None:
        self.at = at
        self.stopped = 0  # LPs stopped or not started because the time was up
        self.skipped = 0  # methods of the engine not tried because the time was up
        self.searches = 0  # searches of synthesis (z3 and its constructions) cut short or not started by it

    def what(self) -> str:
        """What the time limit stopped, for the result's message ("" when nothing)."""
        parts = [f"{self.stopped} LP(s) (HiGHS)" if self.stopped else "",
                 f"{self.skipped} method(s) of the engine" if self.skipped else "",
                 f"{self.searches} search(es) of the synthesizer" if self.searches else ""]
        return " and ".join(p for p in parts if p)

    def left(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def passed(self) -> bool:
        left = self.left()
        return left is not None and left <= 0


_DEADLINE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("smtcoll_lp_deadline", default=None)


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[Deadline]:
    """Every `solve` inside gets HiGHS's `time_limit` = the time left of `seconds` from now (None: none)."""
    d = Deadline(None if seconds is None else time.monotonic() + seconds)
    token = _DEADLINE.set(d)
    try:
        yield d
    finally:
        _DEADLINE.reset(token)


def deadline() -> Deadline | None:
    """The current `time_limit`, if any (the engine stops trying further methods when it has passed)."""
    return _DEADLINE.get()


Method = Literal["highs", "highs-ds", "highs-ipm"]  # scipy's HiGHS methods
TIME_LIMIT_STATUS = 1  # linprog's "iteration or time limit reached"


def solve(cost: Any, a_ub: Any = None, b_ub: Any = None, a_eq: Any = None, b_eq: Any = None,
          method: Method = "highs", max_iterations: int | None = None) -> LPResult:
    """min cost.x subject to a_ub x <= b_ub, a_eq x = b_eq, x >= 0, with HiGHS (scipy's linprog; `method`
    one of its HiGHS methods), within the time left of the current `time_limit` and `max_iterations` (a
    budget that does not depend on the machine's load; status 1 and no value when either runs out)."""
    from scipy.optimize import linprog

    d = _DEADLINE.get()
    time_limit: float | None = None
    if d is not None and d.at is not None:
        time_limit = d.left() or 0.0
        if time_limit <= 0:
            d.stopped += 1
            return LPResult(TIME_LIMIT_STATUS, None, message="not solved: the time limit had passed")
    options: Any = {} if time_limit is None else {"time_limit": time_limit}  # scipy-stubs: a TypedDict per method
    if max_iterations is not None:
        options["maxiter"] = max_iterations
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method=method,
                  options=options)
    if res.status != 0:
        out_of_iterations = max_iterations is not None and int(getattr(res, "nit", 0) or 0) >= max_iterations
        if d is not None and res.status == TIME_LIMIT_STATUS and time_limit is not None and not out_of_iterations:
            d.stopped += 1
        if res.status == TIME_LIMIT_STATUS and out_of_iterations:
            return LPResult(TIME_LIMIT_STATUS, None, message=f"not solved within {max_iterations} iterations")
        return LPResult(int(res.status), None, message=str(res.message))
    if res.fun is None or res.x is None:  # an optimal status comes with both (None only when not solved)
        from smtcoll.errors import InternalError

        raise InternalError(f"internal error: HiGHS reported an optimum without a solution ({res.message})")
    ineq = tuple(float(v) for v in res.ineqlin.marginals) if a_ub is not None else ()
    eq = tuple(float(v) for v in res.eqlin.marginals) if a_eq is not None else ()
    return LPResult(0, float(res.fun), tuple(float(v) for v in res.x), ineq, eq, str(res.message))


@attrs.frozen
class Commodity:
    """Flow that may start at any of `sources` and must deliver `demand[v]` into each rank v."""

    sources: frozenset[int]
    demand: Mapping[int, Fraction]


@attrs.frozen
class FlowSolution:
    """The least time `value` in which the capacities carry every commodity concurrently, with the dual:
    a length per link and per switch group (>= 0, rounded to fractions: any lengths give a valid bound)."""

    value: float
    link_lengths: tuple[Fraction, ...]
    group_lengths: tuple[Fraction, ...]
    flows: tuple[tuple[float, ...], ...]  # per commodity, per link (the LP routing)


def group_members(topo: Topology) -> list[list[int]]:
    """Per switch group, the indices of the links it bounds."""
    out: list[list[int]] = [[] for _ in topo.switches]
    for e, l in enumerate(topo.links):  # a lookup per link, not a scan of every group's tuples per link
        for g in topo.switches_of(l.src, l.dst):
            out[g].append(e)
    return out


def link_ends(topo: Topology) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per rank, the indices of the links into it and out of it (the flow LPs' conservation rows)."""
    into: dict[int, list[int]] = {v: [] for v in range(topo.ranks)}
    out_of: dict[int, list[int]] = {v: [] for v in range(topo.ranks)}
    for e, l in enumerate(topo.links):
        into[l.dst].append(e)
        out_of[l.src].append(e)
    return into, out_of


def concurrent_flow(topo: Topology, commodities: Sequence[Commodity], link_cap: Sequence[Fraction],
                    group_cap: Sequence[Fraction], flow_cost: float = 0.0, method: Method = "highs",
                    ) -> FlowSolution | None:
    """min T: every commodity routed (flow conservation at ranks outside its sources), the flow on link e
    at most link_cap[e] * T, through switch group g at most group_cap[g] * T. None when infeasible.

    Dual: lengths w_e, w_g >= 0 with sum cap * w = 1; T >= sum over demands of demand x (shortest
    distance from the sources under w_e + sum of w_g over the groups bounding e).

    `flow_cost` > 0 adds that cost per unit of flow (a routing wants no circulating flow); the lengths
    then still prove a bound (any lengths do), only maybe a little below the optimum. `method`: HiGHS's
    method (`solve`)."""
    import numpy as np

    links = topo.links
    m, k = len(links), len(commodities)
    if not k:
        return FlowSolution(0.0, tuple(Fraction(0) for _ in links), tuple(Fraction(0) for _ in topo.switches), ())
    t_var = k * m
    eq_r: list[int] = []
    eq_c: list[int] = []
    eq_v: list[float] = []
    b_eq: list[float] = []
    into, out_of = link_ends(topo)
    for i, com in enumerate(commodities):
        for v in range(topo.ranks):
            if v in com.sources:
                continue
            row = len(b_eq)
            for e in into[v]:
                _put(eq_r, eq_c, eq_v, row, i * m + e, 1.0)
            for e in out_of[v]:
                _put(eq_r, eq_c, eq_v, row, i * m + e, -1.0)
            b_eq.append(float(com.demand.get(v, 0)))
    ub_r: list[int] = []
    ub_c: list[int] = []
    ub_v: list[float] = []
    rows = [[e] for e in range(m)] + group_members(topo)
    caps = list(link_cap) + list(group_cap)
    for row, (members, cap) in enumerate(zip(rows, caps, strict=True)):
        for e in members:
            for i in range(k):
                _put(ub_r, ub_c, ub_v, row, i * m + e, 1.0)
        _put(ub_r, ub_c, ub_v, row, t_var, -float(cap))
    n = t_var + 1
    cost = np.full(n, float(flow_cost))
    cost[t_var] = 1.0
    a_eq = _sparse(eq_v, eq_r, eq_c, (len(b_eq), n))
    a_ub = _sparse(ub_v, ub_r, ub_c, (len(rows), n))
    res = solve(cost, a_ub, np.zeros(len(rows)), a_eq, np.array(b_eq), method)
    if res.status != 0 or res.value is None:
        return None
    value = res.x[t_var]  # the time itself, without the flow cost
    # marginals of a minimization's <= rows are <= 0: the lengths are their negation, as fractions (the
    # certificate recomputes the bound they give exactly, so rounding only loses a little tightness)
    # (scaled so that the largest is 1 first: the bound is a ratio, invariant under scaling)
    top = max((-d for d in res.ineq_duals), default=0.0)
    lengths = [max(Fraction(0), Fraction(-d / top).limit_denominator(10**6)) if top > 0 else Fraction(0)
               for d in res.ineq_duals]
    flows = tuple(tuple(res.x[i * m:(i + 1) * m]) for i in range(k))
    return FlowSolution(value, tuple(lengths[:m]), tuple(lengths[m:]), flows)


def unicast_commodities(coll: Collective, weight: Fraction = Fraction(1)) -> list[Commodity] | None:
    """The collective's demands as commodities by source set, when every chunk a rank lacks is needed
    by one rank only (Alltoall, Scatter, Gather); None otherwise (multicast or combining)."""
    if coll.is_combining:
        return None
    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    needers: dict[int, list[int]] = {}
    for r, c in coll.post:
        if r not in holders.get(c, set()):
            needers.setdefault(c, []).append(r)
    if any(len(rs) > 1 for rs in needers.values()):
        return None
    by_src: dict[frozenset[int], dict[int, Fraction]] = {}
    for c, rs in sorted(needers.items()):
        d = by_src.setdefault(frozenset(holders.get(c, set())), {})
        d[rs[0]] = d.get(rs[0], Fraction(0)) + weight
    return [Commodity(s, d) for s, d in sorted(by_src.items(), key=lambda x: sorted(x[0]))]


def lp_per_chunk(optimum: float, coll: Collective) -> Fraction | None:
    """The LP optimum (a float) as a fraction no larger than it beyond the solver's tolerance, per chunk."""
    if optimum <= 0:
        return None
    return Fraction(optimum - 1e-7).limit_denominator(10**4) / coll.chunk_factor


def lp_bound(topo: Topology, coll: Collective, at_least: Fraction | None = None) -> Bound:
    """Rounds >= the optimum T of the multi-commodity flow LP: every chunk from its holders to each rank
    that needs it, at most bandwidth(e) * T over link e, likewise per switch group. Unicast collectives
    (each chunk to one rank) solve the compact concurrent flow by source; multicast ones the per-(chunk,
    rank) LP where link e carries y[c,e] >= every flow of chunk c. (Non-combining collectives only.)
    `at_least`: rounds a cut already proves for this instance; where a shortest-path routing meets it, the
    unicast LP's optimum is that routing's time and is not solved (`routing`)."""
    if coll.is_combining:
        return Bound("lp", None, "rounds", {}, "not computed for combining collectives")
    coms = unicast_commodities(coll)
    if coms is not None:
        if not coms:
            return Bound("lp", 0, "rounds", {"lp_optimum": 0.0}, "nothing to move")
        from smtcoll.bounds.symmetric_lp import node_group, symmetric_flow

        caps = [Fraction(l.bandwidth) for l in topo.links], [Fraction(g.bandwidth) for g in topo.switches]
        if at_least is not None:
            from smtcoll.bounds.routing import route_time

            routed = route_time(topo, coms, *caps)
            if routed is not None and routed <= at_least:  # the optimum is between the two: routed
                w = {"lp_optimum": round(float(routed), 6), "demands": sum(len(c.demand) for c in coms),
                     "commodities": len(coms), "solver": "none: a shortest-path routing meets the cut bound",
                     "rounds_per_chunk": round(float(routed) / coll.chunk_factor, 6)}
                return Bound("lp", math.ceil(routed), "rounds", w,
                             "the optimum: a routing along shortest paths takes as long as a cut proves",
                             routed / coll.chunk_factor)
        # the same optimum from one commodity per orbit of the machine's symmetries, where it has them
        sol = symmetric_flow(topo, coms, *caps)
        group = node_group(topo) if sol is not None else None
        reduced = len(coms) // len(group) if group else len(coms)
        if sol is None:
            from smtcoll.bounds.sink_lp import sink_commodities, sink_flow

            # fewer sinks than sources (Gather): one commodity per sink, the same optimum
            sol = sink_flow(topo, coms, *caps)
            if sol is not None:
                reduced = len(sink_commodities(coms) or ())
        if sol is None:
            sol = concurrent_flow(topo, coms, *caps)
        if sol is None:
            return Bound("lp", None, "rounds", {}, "the flow LP is infeasible: some rank cannot be reached")
        t = sol.value
        w = {"lp_optimum": round(t, 6), "demands": sum(len(c.demand) for c in coms), "commodities": len(coms),
             "variables": reduced * len(topo.links) + 1, "solver": "scipy HiGHS",
             "rounds_per_chunk": round(t / coll.chunk_factor, 6)}
        if group:
            w["symmetries"] = len(group)
        return Bound("lp", math.ceil(t - 1e-6), "rounds", w, "re-solve the LP to check (no hand witness)",
                     lp_per_chunk(t, coll))
    return _multicast_lp_bound(topo, coll, at_least)


# HiGHS's iterations for the multicast LP (deterministic, unlike a time limit): about 4 CPU s on a 2-core
# machine of 2026. Beyond it the LP is left out and the other bounds stand (a100 x4 / mi250 x2 Broadcast: 11,309
# / 19,993 iterations, 7 / 13 s, for the cut's own 1/2 and 1/8 round per chunk; a100 x3 3,870, 0.9 s)
MULTICAST_LP_MAX_ITERATIONS = 6_000
# the most pieces x flow variables the trees that may stand in for the multicast LP are grown for (Python:
# about 1 CPU s at 500,000, where the LP itself would take 2-140 s)
TREE_WORK = 500_000


def _multicast_lp_bound(topo: Topology, coll: Collective, at_least: Fraction | None = None) -> Bound:
    import numpy as np

    holders: dict[int, set[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, set()).add(r)
    demands = [(c, r) for r, c in coll.post if r not in holders[c]]
    if not demands:
        return Bound("lp", 0, "rounds", {"lp_optimum": 0.0}, "nothing to move")
    links = list(topo.links)
    used = sorted({c for c, _ in demands})
    n_f = len(demands) * len(links)
    n_y = len(used) * len(links)
    if n_f + n_y > MULTICAST_LP_MAX_VARIABLES:
        return Bound("lp", None, "rounds", {}, f"not computed: {n_f + n_y} variables "
                                              f"(limit {MULTICAST_LP_MAX_VARIABLES})")
    if at_least is not None:
        from smtcoll.bounds.tree_route import tree_route_time

        caps = [Fraction(l.bandwidth) for l in links], [Fraction(g.bandwidth) for g in topo.switches]
        # whole chunks, then as many pieces as the cut's denominator and twice that (a cut of 15/2 rounds needs
        # halves, 1/8 eighths), while the trees' work (about pieces x the LP's flow variables) stays small
        d = at_least.denominator
        for pieces in sorted({1, d, 2 * d} if d > 1 else {1, 2, 4}):
            if pieces > 1 and pieces * n_f > TREE_WORK:
                break
            routed = tree_route_time(topo, coll, *caps, pieces=pieces, target=at_least)
            if routed is None or routed <= at_least:
                break
        if routed is not None and routed <= at_least:  # the optimum is between the two: routed
            w = {"lp_optimum": round(float(routed), 6), "demands": len(demands),
                 "solver": "none: a tree per chunk meets the cut bound" if pieces == 1 else
                 f"none: a tree per 1/{pieces} of a chunk meets the cut bound",
                 "rounds_per_chunk": round(float(routed) / coll.chunk_factor, 6)}
            return Bound("lp", math.ceil(routed), "rounds", w,
                         "the optimum: trees for the chunks take as long as a cut proves", routed / coll.chunk_factor)
    yi = {c: i for i, c in enumerate(used)}
    t_var = n_f + n_y
    m = len(links)
    eq_rows: list[int] = []
    eq_cols: list[int] = []
    eq_vals: list[float] = []
    b_eq: list[float] = []
    for k, (c, r) in enumerate(demands):
        for v in range(topo.ranks):
            if v in holders[c]:
                continue
            row = len(b_eq)
            for e, l in enumerate(links):
                if l.dst == v:
                    _put(eq_rows, eq_cols, eq_vals, row, k * m + e, 1.0)
                if l.src == v:
                    _put(eq_rows, eq_cols, eq_vals, row, k * m + e, -1.0)
            b_eq.append(1.0 if v == r else 0.0)
    ub_rows: list[int] = []
    ub_cols: list[int] = []
    ub_vals: list[float] = []
    row = 0
    for k, (c, _) in enumerate(demands):
        for e in range(m):
            ub_rows += [row, row]
            ub_cols += [k * m + e, n_f + yi[c] * m + e]
            ub_vals += [1.0, -1.0]
            row += 1
    for members, cap in zip([[e] for e in range(m)] + group_members(topo),
                            [l.bandwidth for l in links] + [g.bandwidth for g in topo.switches], strict=True):
        for e in members:
            for c in used:
                _put(ub_rows, ub_cols, ub_vals, row, n_f + yi[c] * m + e, 1.0)
        _put(ub_rows, ub_cols, ub_vals, row, t_var, -float(cap))
        row += 1
    n = t_var + 1
    cost = np.zeros(n)
    cost[t_var] = 1.0
    a_eq = _sparse(eq_vals, eq_rows, eq_cols, (len(b_eq), n))
    a_ub = _sparse(ub_vals, ub_rows, ub_cols, (row, n))
    res = solve(cost, a_ub, np.zeros(row), a_eq, np.array(b_eq), max_iterations=MULTICAST_LP_MAX_ITERATIONS)
    if res.status == 2:
        return Bound("lp", None, "rounds", {}, "the flow LP is infeasible: some rank cannot be reached")
    if res.status != 0 or res.value is None:
        return Bound("lp", None, "rounds", {}, f"not computed: {res.message}")
    t = res.value
    w = {"lp_optimum": round(t, 6), "demands": len(demands), "variables": n, "solver": "scipy HiGHS",
         "rounds_per_chunk": round(t / coll.chunk_factor, 6)}
    return Bound("lp", math.ceil(t - 1e-6), "rounds", w, "re-solve the LP to check (no hand witness)",
                 lp_per_chunk(t, coll))
