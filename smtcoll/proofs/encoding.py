"""A small SMT-LIB2 encoding of "a schedule exists within the budget", written to be reviewed.

It is independent of `smtcoll.synth` and mirrors the checker (`smtcoll.check.schedule`) rule by rule.
UNSAT of the formula proves the claim "no schedule with at most S steps and at most R rounds exists".

Variables (all Boolean):
- `h_<r>_<a>_<t>`: rank r holds address a after step t (t = 0 is the start); for a COMBINING collective
  (Allreduce, Reduce, ReduceScatter: contributions summed at one address) instead `h_<r>_<c>_<t>`: rank
  r's value at address(c) contains contribution c after step t (`_combining`, families of its own; the
  formulas of non-combining collectives are unchanged by them);
- `x_<t>_<a>_<s>_<d>`: in step t (1..S) rank s sends address a to rank d, over an existing link only;
- `k_<t>_<j>`: step t has at least j rounds (j = 1..R), when the claim bounds the rounds.

A step may have 0 rounds (then it can send nothing): so a schedule with fewer steps fits the horizon
of S steps. Without a round budget, rounds are unbounded and the capacity families are left out: any
load fits in enough rounds. Duplicate identical sends only add load (for a combining collective, a
repeated arrival can only be a no-op copy or a double count), so one Boolean per send loses no schedule.

The checker takes a combining step's arrivals at a rank and address in send order, and whether one
double counts depends on that order; the formula says "SOME order is accepted" (four rules, proved
equivalent in docs/proofs.md and tested exhaustively), and `decode` emits such an order. Output is
deterministic: the same input gives the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import attrs

from smtcoll.errors import ModelError
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.proofs.claim import Claim

ENCODER = "smtcoll.proofs.encoding/1"


def _sum(terms: list[str]) -> str:
    if not terms:
        return "0"
    return terms[0] if len(terms) == 1 else f"(+ {' '.join(terms)})"


def _or(terms: list[str]) -> str:
    if not terms:
        return "false"
    return terms[0] if len(terms) == 1 else f"(or {' '.join(terms)})"


@attrs.frozen
class Encoding:
    """The formula and the names of its variables, to decode models and encode schedules."""

    topology: Topology
    collective: Collective
    claim: Claim
    text: str

    @property
    def horizon(self) -> int:
        return self.claim.step_horizon

    def holds(self, r: int, a: int, t: int) -> str:
        return f"h_{r}_{a}_{t}"

    def send(self, t: int, a: int, s: int, d: int) -> str:
        return f"x_{t}_{a}_{s}_{d}"

    def round_var(self, t: int, j: int) -> str:
        return f"k_{t}_{j}"

    def decode(self, value: dict[str, bool]) -> Schedule:
        """A model (variable name -> truth value) as a Schedule: empty steps are dropped; without a
        round budget a step gets the fewest rounds its load needs."""
        topo, coll = self.topology, self.collective
        steps = []
        values = _start(coll)
        for t in range(1, self.horizon + 1):
            sends = [Send(a, l.src, l.dst) for a in coll.addresses for l in topo.links
                     if value.get(self.send(t, a, l.src, l.dst), False)]
            if not sends:
                continue
            if coll.is_combining:  # the checker takes arrivals in send order: emit an order it accepts
                sends, values = _ordered(sends, values), _after(sends, values)
            if self.claim.rounds is not None:
                rounds = sum(value.get(self.round_var(t, j), False) for j in range(1, self.claim.rounds + 1))
            else:
                rounds = _rounds_needed(topo, sends)
            steps.append(Step(max(1, rounds), sends if coll.is_combining else sorted(sends)))
        return Schedule(topo, coll, steps, "decoded")

    def assignment(self, schedule: Schedule) -> dict[str, bool]:
        """The variable values a schedule induces (it must fit the horizon and name only existing
        links and addresses): the converse of `decode`, used to test that every checked schedule
        satisfies the formula."""
        coll = self.collective
        if len(schedule.steps) > self.horizon:
            raise ModelError("schedule", f"has {len(schedule.steps)} steps, more than the horizon {self.horizon}")
        value: dict[str, bool] = {}
        if coll.is_combining:
            return self._combining_assignment(schedule)
        held = {(r, coll.address[c]) for r, c in coll.pre}
        for r in range(coll.ranks):
            for a in coll.addresses:
                value[self.holds(r, a, 0)] = (r, a) in held
        for t in range(1, self.horizon + 1):
            step = self._step(schedule, t)
            sent = self._sends_and_rounds(t, step, value)
            held = held | {(d, a) for a, s, d in sent if (s, a) in held}
            for r in range(coll.ranks):
                for a in coll.addresses:
                    value[self.holds(r, a, t)] = (r, a) in held
        return value

    def _step(self, schedule: Schedule, t: int) -> Step:
        """Step t of the schedule; past its end an empty step (0 rounds when the claim counts rounds)."""
        return schedule.steps[t - 1] if t <= len(schedule.steps) else Step(0 if self.claim.rounds else 1, ())

    def _sends_and_rounds(self, t: int, step: Step, value: dict[str, bool]) -> set[tuple[int, int, int]]:
        """Set the send and round variables of step t; returns the (address, src, dst) sent."""
        sent = {(s.chunk, s.src, s.dst) for s in step.sends}
        for a in self.collective.addresses:
            for l in self.topology.links:
                value[self.send(t, a, l.src, l.dst)] = (a, l.src, l.dst) in sent
        if self.claim.rounds is not None:
            for j in range(1, self.claim.rounds + 1):
                value[self.round_var(t, j)] = j <= step.rounds
        return sent

    def _combining_assignment(self, schedule: Schedule) -> dict[str, bool]:
        coll = self.collective
        values = _start(coll)
        value: dict[str, bool] = {}
        for t in range(self.horizon + 1):
            if t > 0:
                step = self._step(schedule, t)
                self._sends_and_rounds(t, step, value)
                values = _after(step.sends, values)
            for r in range(coll.ranks):
                for c in range(coll.chunks):
                    value[self.holds(r, c, t)] = c in values.get((r, coll.address[c]), frozenset())
        return value


Values = dict[tuple[int, int], frozenset[int]]  # (rank, address) -> contributions


def _start(coll: Collective) -> Values:
    values: Values = {}
    for r, c in coll.pre:
        values[(r, coll.address[c])] = values.get((r, coll.address[c]), frozenset()) | {c}
    return values


def _after(sends: Iterable[Send], values: Values) -> Values:
    """The values after a step: each receiver joins what it had with every arrival (copy or reduction)."""
    sends = list(sends)
    new = dict(values)
    for s in sends:
        new[(s.dst, s.chunk)] = new.get((s.dst, s.chunk), frozenset()) | values.get((s.src, s.chunk), frozenset())
    return new


def _ordered(sends: list[Send], values: Values) -> list[Send]:
    """A step's sends grouped by (receiver, address), each group in the `arrival_order`."""
    groups: dict[tuple[int, int], list[Send]] = {}
    for s in sends:
        groups.setdefault((s.dst, s.chunk), []).append(s)
    out: list[Send] = []
    for (d, a), group in sorted(groups.items()):
        arrivals = [(s.src, values.get((s.src, a), frozenset())) for s in group]
        out += [Send(a, src, d) for src in arrival_order(values.get((d, a), frozenset()), arrivals)]
    return out


def _rounds_needed(topo: Topology, sends: Iterable[Send]) -> int:
    load = Counter((s.src, s.dst) for s in sends)
    need = [-(-n // topo.bandwidth(src, dst)) for (src, dst), n in load.items()]
    for g in topo.switches:
        n = sum(k for (src, dst), k in load.items() if src in g.srcs and dst in g.dsts)
        need.append(-(-n // g.bandwidth))
    return max(need, default=1)


def encode(topo: Topology, coll: Collective, claim: Claim, header: Iterable[str] = ()) -> Encoding:
    """The SMT-LIB2 formula, satisfiable exactly when a schedule within the claim's budget exists."""
    if topo.ranks != coll.ranks:
        raise ModelError("collective", f"has {coll.ranks} ranks but the topology has {topo.ranks}")
    enc = Encoding(topo, coll, claim, "")
    S, R = claim.step_horizon, claim.rounds
    addrs = coll.addresses
    links = list(topo.links)
    out: list[str] = [f"; {line}" for line in header]
    out += [f"; encoder {ENCODER}: sat = a schedule exists within the budget; unsat proves the claim",
            f"; {claim.text(topo, coll)}", "(set-logic QF_LIA)"]

    def family(comment: str) -> None:
        out.append("")
        out.append(f"; --- {comment}")

    if coll.is_combining:
        _combining(enc, out, family)
        out += ["", "(check-sat)", ""]
        return attrs.evolve(enc, text="\n".join(out))

    family("variables: h = holds after step t, x = send in step t over a link, k = step t has >= j rounds")
    for t in range(S + 1):
        for r in range(coll.ranks):
            for a in addrs:
                out.append(f"(declare-const {enc.holds(r, a, t)} Bool)")
    for t in range(1, S + 1):
        for a in addrs:
            for l in links:
                out.append(f"(declare-const {enc.send(t, a, l.src, l.dst)} Bool)")
        for j in range(1, (R or 0) + 1):
            out.append(f"(declare-const {enc.round_var(t, j)} Bool)")

    family("precondition: at the start a rank holds exactly the addresses of its chunks in pre")
    start = {(r, coll.address[c]) for r, c in coll.pre}
    for r in range(coll.ranks):
        for a in addrs:
            v = enc.holds(r, a, 0)
            out.append(f"(assert {v})" if (r, a) in start else f"(assert (not {v}))")

    family("causality: a send moves what the sender held when the step began")
    for t in range(1, S + 1):
        for a in addrs:
            for l in links:
                out.append(f"(assert (=> {enc.send(t, a, l.src, l.dst)} {enc.holds(l.src, a, t - 1)}))")

    family("holding: after step t a rank holds what it held before or received in step t, nothing else")
    for t in range(1, S + 1):
        for r in range(coll.ranks):
            for a in addrs:
                got = [enc.send(t, a, l.src, r) for l in links if l.dst == r]
                out.append(f"(assert (= {enc.holds(r, a, t)} {_or([enc.holds(r, a, t - 1), *got])}))")

    _capacity(enc, out, family)

    family(f"postcondition: after step {S} every rank holds every address of its chunks in post")
    for r, c in coll.post:
        out.append(f"(assert {enc.holds(r, coll.address[c], S)})")

    out += ["", "(check-sat)", ""]
    return attrs.evolve(enc, text="\n".join(out))


def _capacity(enc: Encoding, out: list[str], family: Callable[[str], None]) -> None:
    """The rounds, round budget, link bandwidth and switch group families (with a round budget only)."""
    topo, addrs, links = enc.topology, enc.collective.addresses, list(enc.topology.links)
    S, R = enc.claim.step_horizon, enc.claim.rounds
    if R is not None:
        family("rounds: k_t_j means step t has at least j rounds (unary, so k_t_j implies k_t_(j-1))")
        for t in range(1, S + 1):
            for j in range(2, R + 1):
                out.append(f"(assert (=> {enc.round_var(t, j)} {enc.round_var(t, j - 1)}))")

        def rounds_times(t: int, bw: int) -> str:
            return _sum([f"(ite {enc.round_var(t, j)} {bw} 0)" for j in range(1, R + 1)])

        family(f"round budget: at most {R} rounds over all steps")
        used = [f"(ite {enc.round_var(t, j)} 1 0)" for t in range(1, S + 1) for j in range(1, R + 1)]
        out.append(f"(assert (<= {_sum(used)} {R}))")

        family("link bandwidth: a link carries at most bandwidth * rounds chunks in a step")
        for t in range(1, S + 1):
            for l in links:
                load = _sum([f"(ite {enc.send(t, a, l.src, l.dst)} 1 0)" for a in addrs])
                out.append(f"(assert (<= {load} {rounds_times(t, l.bandwidth)}))")

        family("switch groups: at most bandwidth * rounds chunks from srcs to dsts in a step")
        for t in range(1, S + 1):
            for g in topo.switches:
                members = [l for l in links if l.src in g.srcs and l.dst in g.dsts]
                if not members:
                    continue
                load = _sum([f"(ite {enc.send(t, a, l.src, l.dst)} 1 0)" for l in members for a in addrs])
                out.append(f"(assert (<= {load} {rounds_times(t, g.bandwidth)}))")


# --- combining collectives ---------------------------------------------------------------------

def _combining(enc: Encoding, out: list[str], family: Callable[[str], None]) -> None:
    """The families of a combining collective: values are sets of contributions, `h_<r>_<c>_<t>` says
    rank r's value at address(c) contains contribution c after step t."""
    topo, coll = enc.topology, enc.collective
    S, addrs, links = enc.claim.step_horizon, coll.addresses, list(topo.links)
    parts = {a: [c for c in range(coll.chunks) if coll.address[c] == a] for a in addrs}

    family("variables: h = value contains contribution after step t, x = send in step t over a link, "
           "k = step t has >= j rounds")
    for t in range(enc.horizon + 1):
        for r in range(coll.ranks):
            for c in range(coll.chunks):
                out.append(f"(declare-const {enc.holds(r, c, t)} Bool)")
    for t in range(1, S + 1):
        for a in addrs:
            for l in links:
                out.append(f"(declare-const {enc.send(t, a, l.src, l.dst)} Bool)")
        for j in range(1, (enc.claim.rounds or 0) + 1):
            out.append(f"(declare-const {enc.round_var(t, j)} Bool)")

    family("precondition: at the start a rank's value at an address is exactly its contributions in pre")
    pre = set(coll.pre)
    for r in range(coll.ranks):
        for c in range(coll.chunks):
            v = enc.holds(r, c, 0)
            out.append(f"(assert {v})" if (r, c) in pre else f"(assert (not {v}))")

    family("causality: a send moves the sender's value as the step began, which must not be empty")
    for t in range(1, S + 1):
        for a in addrs:
            for l in links:
                held = _or([enc.holds(l.src, c, t - 1) for c in parts[a]])
                out.append(f"(assert (=> {enc.send(t, a, l.src, l.dst)} {held}))")

    family("arrivals: some order of a step's arrivals at a rank and address makes each one a copy (it "
           "contains the value so far) or a reduction (it is disjoint from it); docs/proofs.md proves these "
           "four rules say exactly that: (1) an arrival contains the receiver's value or is disjoint from it; "
           "(2) two arrivals are nested or disjoint; an arrival is loaded when it meets the receiver's value or "
           "contains another arrival; (3) a loaded arrival meets a non-empty receiver's value; (4) two loaded "
           "arrivals meet")
    for t in range(1, S + 1):
        for d in range(coll.ranks):
            srcs = [l.src for l in links if l.dst == d]
            for a in addrs:
                val = {s: [enc.holds(s, c, t - 1) for c in parts[a]] for s in [d, *srcs]}
                x = {s: enc.send(t, a, s, d) for s in srcs}
                loaded = {s: _or([_meet(val[s], val[d]), *[f"(and {x[o]} {_within(val[o], val[s])})"
                                                           for o in srcs if o != s]]) for s in srcs}
                for i, s in enumerate(srcs):
                    out.append(f"(assert (=> {x[s]} (or (not {_meet(val[s], val[d])}) {_within(val[d], val[s])})))")
                    for o in srcs[i + 1:]:
                        out.append(f"(assert (=> (and {x[s]} {x[o]}) (or (not {_meet(val[s], val[o])}) "
                                   f"{_within(val[s], val[o])} {_within(val[o], val[s])})))")
                    out.append(f"(assert (=> (and {x[s]} {loaded[s]} {_or(val[d])}) {_meet(val[s], val[d])}))")
                    for o in srcs[i + 1:]:
                        out.append(f"(assert (=> (and {x[s]} {x[o]} {loaded[s]} {loaded[o]}) "
                                   f"{_meet(val[s], val[o])}))")

    family("value: after step t a rank's value is its value before joined with every arrival (a copy or a "
           "reduction both give the union)")
    for t in range(1, S + 1):
        for r in range(coll.ranks):
            for c in range(coll.chunks):
                got = [f"(and {enc.send(t, coll.address[c], l.src, r)} {enc.holds(l.src, c, t - 1)})"
                       for l in links if l.dst == r]
                out.append(f"(assert (= {enc.holds(r, c, t)} {_or([enc.holds(r, c, t - 1), *got])}))")

    _capacity(enc, out, family)

    family(f"postcondition: after step {S} a rank's value at every address its post names is exactly the "
           "contributions post names there")
    for r in range(coll.ranks):
        named = {coll.address[c] for c in coll.post_sets[r]}
        for a in sorted(named):
            for c in parts[a]:
                v = enc.holds(r, c, S)
                out.append(f"(assert {v})" if c in coll.post_sets[r] else f"(assert (not {v}))")


def _meet(u: Sequence[str], v: Sequence[str]) -> str:
    """The two values (membership literals over the same contributions) share a contribution."""
    return _or([f"(and {p} {q})" for p, q in zip(u, v, strict=True)])


def _within(u: Sequence[str], v: Sequence[str]) -> str:
    """Value u is a subset of value v."""
    terms = [f"(=> {p} {q})" for p, q in zip(u, v, strict=True)]
    return terms[0] if len(terms) == 1 else f"(and {' '.join(terms)})"


def arrival_order(current: frozenset[int], arrivals: Sequence[tuple[int, frozenset[int]]]) -> list[int]:
    """The sources of a step's arrivals (source, value) at one rank and address, in an order in which the
    checker accepts every arrival whenever the four arrival rules hold (docs/proofs.md): by the size of
    the smallest loaded arrival containing it (the loaded ones form a chain), a loaded arrival after the
    unloaded ones inside it, unloaded arrivals outside every loaded one last; ties by source."""
    def loaded(i: int) -> bool:
        v = arrivals[i][1]
        return bool(v & current) or any(w <= v for j, (_, w) in enumerate(arrivals) if j != i)

    chain = [arrivals[i][1] for i in range(len(arrivals)) if loaded(i)]

    def key(i: int) -> tuple[float, bool, int]:
        src, v = arrivals[i]
        return min((len(w) for w in chain if v <= w), default=float("inf")), loaded(i), src

    return [arrivals[i][0] for i in sorted(range(len(arrivals)), key=key)]
