"""Allgather on a machine of nodes that a translation group maps onto itself: rank 0's broadcast trees,
grown round by round within the orbit capacities, translated to every rank.

On the machines `orbit` recognises (ranks (n, g), every link and switch group mapped onto one of the same
bandwidth by (n, g) -> (n + m mod N, g + k mod P): a100 x N, an NVSwitch and a NIC per GPU on two rails),
rank x's chunk j can follow the translate by x of rank 0's tree for its chunk j. In a round the translates
of rank 0's hops load each switch group's orbit representative by the sum of `orbit._usage` over those
hops, the same for every group of the orbit, so the whole schedule is feasible when rank 0's hops fit the
representatives' bandwidths round by round. The trees grow greedily: every round, the chunk held by the
fewest ranks first, every hop from a holder to a rank lacking it that still fits (the lowest such rank).

At the receive bound a rank takes a new chunk on every port every round, which is what the trees do when
every round has a hop for every representative: on a100 x N one hop over the NVSwitch (to any GPU of a
node that holds the chunk) and one over a NIC (to a GPU of the same rail on another node), so
8N - 1 chunks reach every rank in 4N rounds, the bound, at every node count from 2 up.
"""

from __future__ import annotations

import numpy as np

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.scale.nodes_allreduce import _named_nodes
from smtcoll.synth.scale.orbit import _group, _representatives, _usage
from smtcoll.synth.scale.translate import allgather_shape


def orbit_allgather(topo: Topology, coll: Collective, max_steps: int) -> Schedule | None:
    """The translated schedule (module docstring), or None when the collective is not Allgather-shaped,
    the machine is not translation-invariant over several nodes, or the trees need more than max_steps."""
    own = allgather_shape(coll)
    if own is None or topo.ranks < 3:
        return None
    grp = _group(topo, _named_nodes(topo))
    if grp is None or grp.n < 2:
        return None
    members, caps_list = _representatives(topo, grp)
    caps = np.array(caps_list, dtype=np.int64)
    p, per = topo.ranks, len(own[0])
    ranks = np.arange(p)

    def act(x: np.ndarray | int, r: np.ndarray | int) -> np.ndarray:
        return ((np.asarray(x) // grp.p + np.asarray(r) // grp.p) % grp.n) * grp.p + \
            (np.asarray(x) % grp.p + np.asarray(r) % grp.p) % grp.p

    # rank 0's out-links: the offset d of a hop a -> a + d and how much it loads each representative
    offsets = sorted({l.dst for l in topo.links if l.src == 0})
    load_of = np.zeros((len(offsets), len(caps)), dtype=np.int64)
    for i, d in enumerate(offsets):
        for rep, k in _usage(grp, members, 0, d):
            load_of[i, rep] = k
    # back[i][b] = b - d: the rank a hop with offset i into b starts from
    inverse = [int(np.nonzero(act(ranks, d) == 0)[0][0]) for d in offsets]
    back = [act(ranks, e) for e in inverse]
    ahead = np.stack([act(ranks, d) for d in offsets])  # ahead[i][b] = b + d
    held = np.zeros((per, p), dtype=bool)
    held[:, 0] = True
    plan: list[list[tuple[int, int, int]]] = []  # per round: (chunk j, a, b) hops of rank 0's trees
    while not held.all():
        if len(plan) >= max_steps:
            return None
        before = held.copy()
        load = np.zeros(len(caps), dtype=np.int64)
        hops: list[tuple[int, int, int]] = []
        for j in sorted(range(per), key=lambda j: (int(before[j].sum()), j)):
            # the offsets with the fewest ranks to reach first: the others have more choice left
            reach = [int((~held[j] & before[j][back[i]]).sum()) for i in range(len(offsets))]
            for i in sorted(range(len(offsets)), key=lambda i: (reach[i], i)):
                while np.all(load + load_of[i] <= caps):
                    targets = np.nonzero(~held[j] & before[j][back[i]])[0]
                    if not len(targets):
                        break
                    b = _most_ahead(targets, held[j], ahead)
                    held[j, b] = True
                    load += load_of[i]
                    hops.append((j, int(back[i][b]), b))
        if not hops:
            return None
        plan.append(hops)
    steps = []
    for hops in plan:
        sends: list[tuple[int, int, int]] = []
        for j, a, b in hops:
            src, dst = act(ranks, a), act(ranks, b)
            sends += [(int(coll.address[own[x][j]]), int(u), int(v)) for x, u, v in zip(ranks, src, dst, strict=True)]
        steps.append(Step(1, [Send(c, u, v) for c, u, v in sorted(sends)]))
    return Schedule(topo, coll, steps)


SCORE_WORK = 50_000  # targets x offsets scored per pick; beyond it the lowest target (1024 ranks: 515 offsets)


def _most_ahead(targets: np.ndarray, held: np.ndarray, ahead: np.ndarray) -> int:
    """The target with the most out-neighbours lacking the chunk (it can pass it on next round, so the
    frontier of every offset stays non-empty), the lowest first; the lowest alone beyond SCORE_WORK."""
    if len(targets) * len(ahead) > SCORE_WORK:
        return int(targets[0])
    score = (~held[ahead[:, targets]]).sum(axis=0)
    return int(targets[np.argmax(score)])
