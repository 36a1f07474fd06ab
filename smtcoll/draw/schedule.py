"""What a schedule does, per step and link: the table behind `smtcoll show schedule`, and its picture,
link usage over steps (a heat map of each link's load) and a timeline in the alpha-beta model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from smtcoll.draw import new_figure, save
from smtcoll.model import Schedule
from smtcoll.text import count

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@attrs.frozen
class LinkUse:
    """The sends of one step over one link: `load` is sends / (bandwidth x the step's rounds), 1 = full."""

    step: int
    src: int
    dst: int
    chunks: tuple[int, ...]
    bandwidth: int
    load: float


def link_uses(schedule: Schedule) -> list[LinkUse]:
    """Every (step, link) with at least one send, in step order then link order."""
    out = []
    for i, step in enumerate(schedule.steps):
        per_link: dict[tuple[int, int], list[int]] = {}
        for send in step.sends:
            per_link.setdefault((send.src, send.dst), []).append(send.chunk)
        for (s, d), chunks in sorted(per_link.items()):
            bw = schedule.topology.bandwidth(s, d) if schedule.topology.link(s, d) else 0
            load = len(chunks) / (bw * step.rounds) if bw else float("inf")
            out.append(LinkUse(i, s, d, tuple(sorted(chunks)), bw, round(load, 6)))
    return out


@attrs.frozen
class Timing:
    """The alpha-beta model of a k-synchronous schedule: a step costs `alpha_us` plus its rounds times the
    time one chunk takes over one unit of bandwidth (`round_us`). Without timing in the topology the
    unit is a round (alpha 0)."""

    alpha_us: float
    round_us: float
    unit: str

    @staticmethod
    def of(schedule: Schedule, size: int) -> Timing:
        from smtcoll.bounds import unit_speed  # the same speed the time bound uses

        topo, coll = schedule.topology, schedule.collective
        speed = unit_speed(topo)
        alphas = [l.alpha_us for l in topo.links if l.alpha_us is not None]
        if speed is None or not alphas:
            return Timing(0.0, 1.0, "rounds")
        out_addrs = max(len({coll.address[c] for c in s}) for s in coll.post_sets)
        return Timing(min(alphas), size / max(1, out_addrs) / (speed * 1e3), "us")

    def starts(self, schedule: Schedule) -> list[float]:
        t, out = 0.0, []
        for step in schedule.steps:
            out.append(t)
            t += self.alpha_us + step.rounds * self.round_us
        out.append(t)
        return out


def schedule_table(schedule: Schedule) -> dict[str, Any]:
    """The JSON of `smtcoll show schedule`: per step its rounds and the sends on each link."""
    uses = link_uses(schedule)
    return {
        "name": schedule.name, "topology": schedule.topology.name, "collective": schedule.collective.name,
        "ranks": schedule.topology.ranks, "steps": len(schedule.steps), "rounds": schedule.rounds,
        "chunks": schedule.collective.chunk_factor, "sends": sum(len(s.sends) for s in schedule.steps),
        "per_step": [{"step": i, "rounds": step.rounds, "links": [
            {"src": u.src, "dst": u.dst, "bandwidth": u.bandwidth, "sends": len(u.chunks), "chunks": list(u.chunks),
             "load": u.load} for u in uses if u.step == i]} for i, step in enumerate(schedule.steps)],
    }


def draw_schedule(schedule: Schedule, path: Path | str | None = None, size: int = 1 << 20) -> Figure:
    """Two panels: link load per step (rows: links used, columns: steps; the number is the sends), and
    the timeline of each link's busy time in the alpha-beta model for `size` bytes of output per rank."""
    import numpy as np
    from matplotlib.patches import Patch

    uses = link_uses(schedule)
    links = sorted({(u.src, u.dst) for u in uses})
    row = {l: i for i, l in enumerate(links)}
    steps = max(1, len(schedule.steps))
    height = min(16.0, 2.5 + 0.22 * len(links))
    fig = new_figure(min(16.0, 6.0 + 0.5 * steps) if len(links) <= 24 else min(18.0, 9.0 + 0.5 * steps),
                     height * 2 if len(links) <= 24 else height)
    heat, timeline = fig.subplots(2, 1, height_ratios=[1, 1]) if len(links) <= 24 else fig.subplots(1, 2)
    grid = np.full((max(1, len(links)), steps), np.nan)
    for u in uses:
        grid[row[(u.src, u.dst)], u.step] = min(u.load, 1.0)
    image = heat.imshow(grid, aspect="auto", cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    if len(links) * steps <= 400:
        for u in uses:
            heat.text(u.step, row[(u.src, u.dst)], str(len(u.chunks)), ha="center", va="center", fontsize=7,
                      color="white" if u.load > 0.6 else "black")
    labels = [f"{s}->{d}" for s, d in links]
    for ax in (heat, timeline):
        ax.set_yticks(range(len(links)), labels, fontsize=7 if len(links) <= 40 else 5)
    heat.set_xticks(range(steps), [f"{i}\n({schedule.steps[i].rounds}r)" for i in range(len(schedule.steps))],
                    fontsize=7)
    heat.set_xlabel("step (rounds)")
    heat.set_title("link usage: load = sends / (bandwidth x rounds)\n(the number: sends)", fontsize=9)
    fig.colorbar(image, ax=heat, label="load", shrink=0.8)
    timing = Timing.of(schedule, size)
    starts = timing.starts(schedule)
    colors = ["#6baed6", "#fd8d3c"]
    for u in uses:
        begin = starts[u.step] + timing.alpha_us
        busy = len(u.chunks) / max(1, u.bandwidth) * timing.round_us
        timeline.broken_barh([(begin, busy)], (row[(u.src, u.dst)] - 0.4, 0.8), color=colors[u.step % 2])
    for t in starts:
        timeline.axvline(t, color="#969696", lw=0.6, ls=":")
    if timing.alpha_us:
        for i in range(len(schedule.steps)):
            timeline.axvspan(starts[i], starts[i] + timing.alpha_us, color="#f0f0f0", zorder=0)
    timeline.set_ylim(len(links) - 0.5, -0.5)
    timeline.set_xlim(0, (starts[-1] or 1) * 1.02)
    what = (f"alpha {timing.alpha_us:g} us per step, beta {timing.round_us:.4g} us per chunk\nper unit of "
            f"bandwidth ({size} B output per rank)" if timing.unit == "us" else
            "the topology has no timing: one round per chunk per unit of bandwidth")
    timeline.set_xlabel(f"time ({timing.unit}); {what}", fontsize=8)
    timeline.set_title(f"timeline (alpha-beta model): {starts[-1]:.4g} {timing.unit} in all", fontsize=9)
    timeline.legend(handles=[Patch(color=colors[0], label="even steps"), Patch(color=colors[1], label="odd steps"),
                             Patch(color="#f0f0f0", label="alpha (latency)")], fontsize=7, loc="lower right")
    fig.suptitle(f"{schedule.name or 'schedule'}: {schedule.collective.name} on {schedule.topology.name}, "
                 f"{count(len(schedule.steps), 'step')}, {count(schedule.rounds, 'round')}, "
                 f"{count(schedule.collective.chunk_factor, 'chunk')} per input", fontsize=10)
    save(fig, path)
    return fig
