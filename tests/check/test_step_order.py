"""The timed run's queue (`execution._StepOrder`) serves, at every pop, the queued thread block whose key is
least when every key is computed afresh: its heap, its cached departures, its per-resource index of waiting
senders and its grouped entries only make that cheaper. The reference below recomputes every key at every pop."""

from __future__ import annotations

from typing import Any

import pytest

from smtcoll import library
from smtcoll.check import execution
from smtcoll.lower import LowerOptions, lower
from smtcoll.sweep import cost
from smtcoll.synth.constructions import build


class _EveryKey(execution._StepOrder):
    """The definition: no heap; each pop computes every queued key and takes the least."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.queue: dict[int, Any] = {}
        super().__init__(*args, **kwargs)

    def append(self, st: Any) -> None:
        self.queue[st.uid] = st
        self.dep[st.uid] = self.departure(st)
        if st.pc < len(st.trans) and st.trans[st.pc].sends:
            for res in self.holds.get(st.uid, ()):
                self.senders[res][st.uid] = st

    def refresh(self, st: Any) -> None:
        pass

    def claimed(self, raised: list[Any], free: Any) -> None:
        for st in raised:
            self.dep[st.uid] = free

    def popleft(self) -> Any:
        st = min(self.queue.values(), key=self._key)
        del self.queue[st.uid]
        for res in self.holds.get(st.uid, ()):
            self.senders[res].pop(st.uid, None)
        return st

    def __len__(self) -> int:
        return len(self.queue)


@pytest.mark.parametrize(("machine", "nodes", "kind", "method", "instances"), [
    ("a100", 1, "allgather", "pairwise", 2),  # an NVSwitch: every sender of a rank shares its port group
    ("dgx1", 1, "allreduce", "ring", 2),
    ("ndv2", 2, "allgather", "rail", 1),  # NICs and NVLinks
])
def test_the_queue_serves_the_least_current_key(monkeypatch, machine, nodes, kind, method, instances):
    topo = library.topology(machine, nodes)
    schedule = build(method, topo, library.collective(kind, topo.ranks))
    model = cost.Model.load()
    m = cost.machine(topo, nodes, model)
    program = lower(schedule, LowerOptions(instances, "Simple", "executor", "outofplace", 1 << 10, 1 << 30,
                                           True)).program
    fast = cost.predict(program, m, model, 1 << 10, 1 << 30)
    monkeypatch.setattr(execution, "_StepOrder", _EveryKey)
    slow = cost.predict(program, m, model, 1 << 10, 1 << 30)
    assert fast is not None and fast == slow
