"""The Z3 encoding of one instance: S steps, at most R rounds, a collective already split in C chunks.

Boolean, step-indexed variables (measured faster than SCCL's integer "time a chunk arrives" encoding,
see docs/synth.md):

- `h[c, r, s]`: rank r holds chunk c (combining: contribution c is in r's value at address(c)) after step s;
- `x[a, (u, v), s]`: in step s, u sends address a over the link u -> v;
- per step, unary extra-round literals `e[s, k]` ("step s has more than k rounds") when R > S.

Bandwidth of every link and switch group is a pseudo-Boolean constraint over the sends of a step with the
step's rounds as unary literals. Before the search, variables are fixed by distances: a chunk cannot be at
a rank before its distance from the nearest holder, and a send into a rank from which no rank that needs
the chunk can be reached in the remaining steps is left out (it cannot matter for the postcondition).

Non-combining collectives: a rank never receives a chunk it already holds (such a send is redundant, so
dropping it keeps every schedule valid: a sound restriction, not an assumption).

Combining collectives (exact for the checker's semantics): per step, rank v and address a, the arrivals
are the sends into v; at most one of them is marked as a copy (its value must contain v's current value,
which it replaces); every contribution is counted at most once among v's value (unless replaced by the
copy) and the arrivals. This is complete: in any valid schedule, arrivals processed before the last copy
of a step are subsets of it and can be dropped without changing any value (docs/synth.md).

`tree=True` (for the duals of Reduce/ReduceScatter) also forbids a rank to receive a chunk twice, so the
time-reversed schedule sends every partial value exactly once.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Sequence
from typing import Literal

import z3

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.result import Outcome

INF = 1 << 30
NO_LIMIT_S = 2_000_000  # the solver timeout (seconds) used when no time limit is given
MAX_SPLITS = 64  # distributions of the rounds over the steps tried one by one (see Encoding.check)


class OutOfTime(Exception):
    """The deadline passed while the encoding was being built (the caller answers `unknown`)."""


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to write `total` as `parts` positive integers, in lexicographic order."""
    if parts == 1:
        yield (total,)
        return
    for first in range(1, total - parts + 2):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _or(*xs: str) -> str:
    return "false" if not xs else xs[0] if len(xs) == 1 else f"(or {' '.join(xs)})"


def _and(*xs: str) -> str:
    return "true" if not xs else xs[0] if len(xs) == 1 else f"(and {' '.join(xs)})"


def _not(a: str) -> str:
    return f"(not {a})"


def _imp(a: str, b: str) -> str:
    return f"(=> {a} {b})"


def _eq(a: str, b: str) -> str:
    return f"(= {a} {b})"


def _atmost(xs: Sequence[str], k: int) -> str:
    return f"((_ at-most {k}) {' '.join(xs)})"


def _pble(terms: Sequence[tuple[str, int]], k: int) -> str:
    coeffs = " ".join(str(c) for _, c in terms)
    return f"((_ pble {k} {coeffs}) {' '.join(t for t, _ in terms)})"


def _dist_matrix(topo: Topology) -> list[list[int]]:
    d = [[INF] * topo.ranks for _ in range(topo.ranks)]
    for s, row in topo.distances.items():
        for t, k in row.items():
            d[s][t] = k
    return d


class Encoding:
    """The constraints of (topology, collective, steps, rounds cap), kept in one solver so that the
    rounds cap can be tightened incrementally (`check(rounds=...)` uses push/pop)."""

    def __init__(self, topo: Topology, coll: Collective, steps: int, rounds: int | None = None,
                 *, tree: bool = False, no_resend: bool = True, symmetry: bool = True, implied: bool = True,
                 unbounded: bool = False, progress_only: bool = False, phase: str | None = None,
                 seed: int = 0, deadline: float | None = None) -> None:
        self.topo, self.coll, self.steps = topo, coll, steps
        self.deadline = deadline  # time.monotonic() at which building gives up (OutOfTime)
        self.rounds = steps if rounds is None else rounds
        if self.rounds < steps:
            raise ValueError("rounds < steps")
        self.combining = coll.is_combining
        self.tree = tree
        self.unbounded = unbounded  # no bandwidth constraints (for "any number of rounds")
        # a shape, not exact: every send brings the chunk closer to a rank that needs it
        self.progress_only = progress_only
        # a fresh context per instance: z3's search depends on term ids, so sharing the global context
        # would make the result depend on what was solved before in the same process
        self.ctx = z3.Context()
        self.solver = z3.SolverFor("QF_FD", ctx=self.ctx)
        self.solver.set("random_seed", seed)
        if phase:
            self.solver.set("sat.phase", phase)
        self._caps: dict[int, z3.BoolRef] = {}
        self._decls: list[str] = []
        self._asserts: list[str] = []
        self._build(no_resend)
        self._clock()
        if implied and not self.combining:
            self._arrivals()
        if symmetry:
            self._break_chunk_symmetry()
        self._clock()

    # --- construction -----------------------------------------------------------------------------
    def _build(self, no_resend: bool) -> None:
        topo, coll, S = self.topo, self.coll, self.steps
        P, K = coll.ranks, coll.chunks
        dist = _dist_matrix(topo)
        add = self._add
        holders = [[r for r in range(P) if c in coll.pre_sets[r]] for c in range(K)]
        # earliest[c][r]: first step after which r can hold c
        earliest = [[min((dist[h][r] for h in holders[c]), default=INF) for r in range(P)] for c in range(K)]
        # addresses and the ranks that need them
        addr = coll.address
        contrib = coll.contributions
        need_ranks: dict[int, list[int]] = {}
        for r, c in coll.post:
            need_ranks.setdefault(addr[c], []).append(r)
        # late[a][v]: hops from v to the nearest rank that needs address a
        late = {a: [min((dist[v][p] for p in rs), default=INF) for v in range(P)] for a, rs in need_ranks.items()}
        links = sorted((l.src, l.dst, l.bandwidth) for l in topo.links)
        in_links: dict[int, list[tuple[int, int]]] = {v: [] for v in range(P)}
        for u, v, _ in links:
            in_links[v].append((u, v))

        # holdings
        h: dict[tuple[int, int, int], str | bool] = {}
        for c in range(K):
            for r in range(P):
                h[c, r, 0] = c in coll.pre_sets[r]
        self.h = h
        # sends, per step
        x: dict[tuple[int, int, int, int], str] = {}
        for s in range(1, S + 1):
            self._clock()
            for u, v, _ in links:
                for a in coll.addresses:
                    lt = late.get(a)
                    if lt is None or lt[v] > S - s:
                        continue  # nothing at v can reach a rank that needs a in time
                    cs = contrib[a]
                    if min(earliest[c][u] for c in cs) > s - 1:
                        continue  # u cannot hold anything of a yet
                    if not self.combining and all(c in coll.pre_sets[v] for c in cs):
                        continue  # v already holds it
                    if self.progress_only and not any(dist[v][p] < dist[u][p] for p in need_ranks[a]):
                        continue
                    x[a, u, v, s] = self._bool(f"x_{a}_{u}_{v}_{s}")
        self.x = x
        # extra rounds
        E = self.rounds - S
        self.extra: list[list[str]] = []
        for s in range(1, S + 1):
            lits = [self._bool(f"e_{s}_{k}") for k in range(E)]
            for k in range(1, E):
                add(_imp(lits[k], lits[k - 1]))
            self.extra.append(lits)
        self.all_extra = [e for lits in self.extra for e in lits]
        if E:
            add(_atmost(self.all_extra, E))

        # transitions
        for s in range(1, S + 1):
            for v in range(P):
                self._clock()
                for a in coll.addresses:
                    arrivals = [(u, x[a, u, v, s]) for (u, _) in in_links[v] if (a, u, v, s) in x]
                    if self.combining:
                        self._combine_step(a, v, s, arrivals, earliest)
                    else:
                        c = contrib[a][0]
                        prev = h[c, v, s - 1]
                        if not arrivals:
                            h[c, v, s] = prev
                            continue
                        for u, xv in arrivals:
                            add(_imp(xv, self._lit(h[c, u, s - 1])))
                            if no_resend and prev is not False:
                                add(_imp(xv, _not(self._lit(prev))))
                        if (self.tree or no_resend) and len(arrivals) > 1:
                            add(_atmost([xv for _, xv in arrivals], 1))
                        if prev is True:
                            h[c, v, s] = True
                            continue
                        hv = self._bool(f"h_{c}_{v}_{s}")
                        add(_eq(hv, _or(*([prev] if prev is not False else []), *[xv for _, xv in arrivals])))
                        h[c, v, s] = hv

        # bandwidth: links and switch groups, scaled by the step's rounds
        for s in range(1, S + 1 if not self.unbounded else 1):
            lits = self.extra[s - 1]
            load: dict[tuple[int, int], list[str]] = {}
            for (_, u, v, t), xv in x.items():
                if t == s:
                    load.setdefault((u, v), []).append(xv)
            for u, v, bw in links:
                self._cap(load.get((u, v), []), bw, lits)
            for g in topo.switches:
                srcs, dsts = set(g.srcs), set(g.dsts)
                sends = [xv for (u, v), xs in sorted(load.items()) if u in srcs and v in dsts for xv in xs]
                self._cap(sends, g.bandwidth, lits)

        # postconditions
        for r in range(P):
            required: dict[int, set[int]] = {}
            for c in coll.post_sets[r]:
                required.setdefault(addr[c], set()).add(c)
            for a, need in required.items():
                for c in contrib[a] if self.combining else sorted(need):
                    want = c in need
                    got = h[c, r, S]
                    if isinstance(got, bool):
                        if got != want:
                            add("false")
                    else:
                        add(got if want else _not(got))

    def _arrivals(self) -> None:
        """Implied: a rank that needs a chunk it lacks receives it in some step (propagates without
        going through the chain of holdings)."""
        into: dict[tuple[int, int], list[str]] = {}
        for (a, _, v, _), xv in self.x.items():
            into.setdefault((a, v), []).append(xv)
        for r, c in self.coll.post:
            if c not in self.coll.pre_sets[r]:
                xs = into.get((self.coll.address[c], r), [])
                self._add(_or(*xs))

    def _break_chunk_symmetry(self) -> None:
        """Interchangeable chunks (same holders, same ranks that need them; for a combining collective the
        C pieces of one address, with all their contributions) can be permuted in any schedule, so
        requiring their holding vectors to be lexicographically ordered keeps a schedule of every shape
        (sort the chunks of a found schedule by their vectors): sound symmetry breaking."""
        coll, S, P = self.coll, self.steps, self.coll.ranks
        groups: dict[object, list[list[int]]] = {}
        if not self.combining:
            for c in range(coll.chunks):
                holders = frozenset(r for r in range(P) if c in coll.pre_sets[r])
                needers = frozenset(r for r in range(P) if c in coll.post_sets[r])
                groups.setdefault((holders, needers), []).append([c])
        else:
            f = coll.chunk_factor
            if f == 1:
                return
            # address a*f + j, contributions c*f + j: piece j of every base chunk
            for a in coll.addresses:
                cs = coll.contributions[a]
                if any(c % f != a % f for c in cs):
                    return
                groups.setdefault((a // f, tuple(c // f for c in cs)), []).append(list(cs))
        for members in groups.values():
            for first, second in itertools.pairwise(members):
                va = [self.h[c, r, s] for c in first for s in range(1, S) for r in range(P)]
                vb = [self.h[c, r, s] for c in second for s in range(1, S) for r in range(P)]
                self._lex_geq(va, vb)

    def _lex_geq(self, va: list, vb: list) -> None:
        add = self._add
        eq: Literal[True] | str = True  # True until the first undecided pair, then its literal
        for a, b in zip(va, vb):
            if isinstance(a, bool) and isinstance(b, bool):
                if a == b:
                    continue
                if b and not a:
                    if eq is True:
                        add("false")
                    else:
                        add(_not(eq))
                    return
                return  # a > b here: the rest is free
            la, lb = self._lit(a), self._lit(b)
            if eq is True:
                add(_imp(lb, la))
            else:
                add(_imp(_and(eq, lb), la))
            self._nlex = getattr(self, "_nlex", 0) + 1
            nxt = self._bool(f"lex_{self._nlex}")
            add(_eq(nxt, _and(self._lit(eq), _eq(la, lb))))
            eq = nxt

    def _clock(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise OutOfTime()

    # The constraints are written as SMT-LIB text and parsed by z3 in one call: building them through
    # z3's Python API cost 0.3 s per DGX-1 encoding with 6 chunks (most of the time of small runs).
    def _bool(self, name: str) -> str:
        self._decls.append(name)
        return name

    def _add(self, term: str) -> None:
        self._asserts.append(term)

    def _lit(self, b: str | bool) -> str:
        return ("true" if b else "false") if isinstance(b, bool) else b

    def _flush(self) -> None:
        if self._decls or self._asserts:
            text = "".join(f"(declare-const {n} Bool)" for n in self._decls)
            text += "".join(f"(assert {a})" for a in self._asserts)
            self.solver.from_string(text)  # parsed into the solver: no Python loop over the assertions
            self._decls, self._asserts = [], []

    def _z(self, name: str) -> z3.BoolRef:
        return z3.Bool(name, self.ctx)

    def _cap(self, sends: list[str], bw: int, extra: Sequence[str]) -> None:
        if len(sends) <= bw:
            return
        if not extra:
            self._add(_atmost(sends, bw))
            return
        # sum(sends) <= bw * (1 + #extra rounds)  <=>  sum(sends) + bw * #(not e) <= bw * (1 + E)
        terms = [(xv, 1) for xv in sends] + [(_not(e), bw) for e in extra]
        self._add(_pble(terms, bw * (1 + len(extra))))

    def _combine_step(self, a: int, v: int, s: int, arrivals: list[tuple[int, str]],
                      earliest: list[list[int]]) -> None:
        add = self._add
        h = self.h
        cs = self.coll.contributions[a]
        if not arrivals:
            for c in cs:
                h[c, v, s] = h[c, v, s - 1]
            return
        # a send carries a nonempty value
        for u, xv in arrivals:
            add(_imp(xv, _or(*[self._lit(h[c, u, s - 1]) for c in cs])))
        copies = []
        for u, xv in arrivals:
            k = self._bool(f"k_{a}_{u}_{v}_{s}")
            add(_imp(k, xv))
            for c in cs:
                hv, hu = h[c, v, s - 1], h[c, u, s - 1]
                if hv is False or hu is True:
                    continue
                add(_imp(_and(k, self._lit(hv)), self._lit(hu)))
            copies.append(k)
        if len(copies) > 1:
            add(_atmost(copies, 1))
        anycopy = _or(*copies)
        for c in cs:
            carried = []
            for u, xv in arrivals:
                hu = h[c, u, s - 1]
                if hu is False:
                    continue
                if hu is True:
                    carried.append(xv)
                else:
                    y = self._bool(f"y_{c}_{u}_{v}_{s}")
                    add(_eq(y, _and(xv, hu)))
                    carried.append(y)
            prev = h[c, v, s - 1]
            terms = list(carried)
            if prev is not False:
                base = self._bool(f"b_{c}_{v}_{s}")
                add(_eq(base, _and(self._lit(prev), _not(anycopy))))
                terms.append(base)
            if len(terms) > 1:
                add(_atmost(terms, 1))
            if not carried:
                h[c, v, s] = prev
            elif prev is True:
                h[c, v, s] = True
            else:
                hv = self._bool(f"h_{c}_{v}_{s}")
                add(_eq(hv, _or(*([prev] if prev is not False else []), *carried)))
                h[c, v, s] = hv
        self._copies = getattr(self, "_copies", {})
        for (u, _), k in zip(arrivals, copies):
            self._copies[a, u, v, s] = k

    # --- solving -----------------------------------------------------------------------------------
    def check(self, rounds: int | None = None, deadline: float | None = None, work: int | None = None,
              ) -> Outcome:
        """Is there a schedule with at most `rounds` rounds (default: the cap given at construction)?

        Fewer rounds can always be padded (more rounds never hurt), so this asks for exactly `rounds`.
        When the distributions of the rounds over the steps are few, each is tried as an assumption on
        the same solver (pure cardinality constraints, learned clauses kept: measured faster than one
        call with the rounds free); otherwise one call with the distribution left to the solver.

        `work`: the most z3 resource units (its deterministic `rlimit` counter) the calls may spend; the
        outcome says how many they spent, so that a budget in these units gives the same answers on an
        idle and on a loaded machine. `deadline` (wall clock) is only the safety stop of --timeout."""
        cap = self.rounds if rounds is None else rounds
        extra = cap - self.steps
        if not 0 <= extra <= self.rounds - self.steps:
            raise ValueError(f"rounds {cap} outside the encoded range {self.steps}..{self.rounds}")
        t0 = time.process_time()
        if extra == 0:
            splits: list[tuple[int, ...] | None] = [(1,) * self.steps]
        elif math.comb(cap - 1, self.steps - 1) <= MAX_SPLITS:
            splits = list(_compositions(cap, self.steps))
        else:
            splits = [None]
        unknown = False
        spent = 0
        reason = ""
        for split in splits:
            if deadline is not None and time.monotonic() >= deadline:
                unknown = True
                break
            if work is not None and spent >= work:
                unknown, reason = True, "budget"
                break
            assumptions = self._assume(split, extra)
            # always set a timeout: z3 searches differently with one (measured: DGX-1 Allgather (3,7,6)
            # 1.4 s with one, 4.2 s without), and the result must not depend on whether one was given
            left = NO_LIMIT_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                unknown = True
                break
            self.solver.set("timeout", max(1, min(int(left * 1000), NO_LIMIT_S * 1000)))
            self.solver.set("rlimit", 0 if work is None else work - spent)  # per call (z3 counts it from 0)
            before = self._work()
            res = self.solver.check(*assumptions)
            spent += self._work() - before
            if res == z3.sat:
                sched = self._decode(self.solver.model())
                return Outcome("sat", sched, time.process_time() - t0, sched.rounds, work=spent)
            if res != z3.unsat:
                if "memory" in self.solver.reason_unknown():
                    return Outcome("unknown", None, time.process_time() - t0, reason="memory", work=spent)
                unknown = True
                reason = "budget" if work is not None and spent >= work else ""
                break
        return Outcome("unknown" if unknown else "unsat", None, time.process_time() - t0, reason=reason, work=spent)

    def _work(self) -> int:
        """z3's resource counter of this solver so far (deterministic, unlike its time)."""
        try:
            return int(self.solver.statistics().get_key_value("rlimit count"))
        except z3.Z3Exception:  # no work counted yet
            return 0

    def _assume(self, split: tuple[int, ...] | None, extra: int) -> list[str]:
        self._flush()
        if split is not None:
            return [self._z(e) if k < r - 1 else z3.Not(self._z(e))
                    for lits, r in zip(self.extra, split) for k, e in enumerate(lits)]
        if extra >= len(self.all_extra):
            return []
        # at most `extra` extra rounds: a guard literal for the cap, made once per cap
        guard = self._caps.get(extra)
        if guard is None:
            # the solver's parser keeps the declarations of earlier `from_string` calls: declare the guard only
            name = f"cap_{extra}"
            body = _atmost(self.all_extra, extra) if extra > 0 else _and(*[_not(e) for e in self.all_extra])
            self.solver.from_string(f"(declare-const {name} Bool)(assert {_imp(name, body)})")
            guard = self._caps[extra] = self._z(name)
        return [guard]

    def _decode(self, model: z3.ModelRef) -> Schedule:
        # variables missing from the model are unconstrained: false is a valid completion
        values = {d.name(): z3.is_true(model[d]) for d in model.decls()}

        def true(name: str) -> bool:
            return values.get(name, False)

        copies = getattr(self, "_copies", {})
        steps = []
        for s in range(1, self.steps + 1):
            rounds = 1 + sum(true(e) for e in self.extra[s - 1])
            sends = []
            for (a, u, v, t), xv in self.x.items():
                if t == s and true(xv):
                    k = copies.get((a, u, v, s))
                    # copies first: the checker applies arrivals in send order
                    sends.append((0 if k is not None and true(k) else 1, a, u, v))
            sends.sort()
            steps.append(Step(rounds, [Send(a, u, v) for _, a, u, v in sends]))
        return Schedule(self.topo, self.coll, steps)

