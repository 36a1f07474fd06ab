"""The Pareto plot of `smtcoll synth --strategy pareto --plot`: steps (latency) against rounds per chunk
(bandwidth cost), the frontier as a staircase, the pruned points with why, and the lower bounds."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from smtcoll.draw import new_figure, save

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from smtcoll.synth.result import SynthResult


def draw_pareto(result: SynthResult, title: str, path: Path | str | None = None) -> Figure:
    fig = new_figure(7.5, 5.0)
    ax = fig.add_subplot()
    points = sorted(result.points, key=lambda p: p.steps)
    if points:
        xs = [p.steps for p in points]
        ys = [float(Fraction(p.rounds or 0, p.chunks)) for p in points]
        ax.step([*xs, xs[-1] + 1], [*ys, ys[-1]], where="post", color="#2171b5", lw=1.2, alpha=0.6)
        ax.plot(xs, ys, "o", color="#2171b5", ms=8, label="Pareto-optimal schedule (found)", zorder=3)
        for p, x, y in zip(points, xs, ys):
            ax.annotate(f"({p.steps}, {p.rounds}, {p.chunks})", (x, y), textcoords="offset points", xytext=(6, 6),
                        fontsize=8)
    bounded = [p for p in result.pruned if p.status == "infeasible" and p.rounds is not None and p.chunks]
    if bounded:
        ax.plot([p.steps for p in bounded], [(p.rounds or 0) / p.chunks for p in bounded], "x", color="#cb181d", ms=6,
                label="proved impossible: no schedule with at most R rounds", zorder=2)
    # below the fewest steps of the frontier nothing exists, whatever the rounds and chunks
    first = min((p.steps for p in points), default=None)
    no_steps = sorted({p.steps for p in result.pruned if p.status == "infeasible" and p.rounds is None
                       and (first is None or p.steps < first)})
    for k, s in enumerate(no_steps):
        ax.axvspan(s - 0.5, s + 0.5, color="#fcbba1", alpha=0.4, zorder=0,
                   label="proved impossible with any rounds and chunks" if k == 0 else None)
    lb = result.lower_bound
    if lb is not None and lb.steps:
        ax.axvline(lb.steps, color="#636363", ls="--", lw=0.8, label=f"lower bound: {lb.steps} steps")
    q = lb.rounds_per_chunk_value if lb is not None else None
    if q is not None and q > 0:
        ax.axhline(q, color="#636363", ls=":", lw=0.8, label=f"lower bound: {q:.4g} rounds per chunk")
    ax.set_xlabel("steps (latency: each step costs alpha)")
    ax.set_ylabel("rounds per chunk (bandwidth cost)")
    ax.set_title(f"Pareto frontier of {title}: (steps, rounds, chunks)", fontsize=10)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    save(fig, path)
    return fig
