"""Drawing a topology so that its structure shows: grids for tori and meshes, the cube-mesh of the DGX-1,
a switch in the middle of switched machines, and for several nodes each node in its box with its NICs
and one switch per rail between the nodes. Bandwidth is the line width and colour, with a legend."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smtcoll.draw import new_figure, save
from smtcoll.model import Topology
from smtcoll.text import count

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Pos = dict[int, tuple[float, float]]
GPU_COLOR, NIC_COLOR, SWITCH_COLOR = "#9ecae1", "#fdd49e", "#d9d9d9"
PALETTE = ["#6baed6", "#2171b5", "#08306b", "#31a354", "#e6550d", "#756bb1"]

# The DGX-1 hybrid cube-mesh as usually drawn: two fully connected quads (0-3 and 4-7) as the front and
# back faces of a cube, GPU i linked to GPU i+4.
_CUBE: Pos = {0: (-1.0, 1.0), 1: (1.0, 1.0), 2: (-1.0, -1.0), 3: (1.0, -1.0),
              4: (-0.45, 0.45), 5: (0.45, 0.45), 6: (-0.45, -0.45), 7: (0.45, -0.45)}


def is_switched(topo: Topology) -> bool:
    """Every rank linked to every other and the traffic bounded by switch groups: an NVSwitch-like
    machine, drawn as one switch with a spoke per rank instead of N*(N-1) lines."""
    n = topo.ranks
    return bool(topo.switches) and n > 2 and len(topo.links) == n * (n - 1)


def layout(topo: Topology) -> Pos:
    """Positions of the ranks of one node topology, chosen from its name where it names a structure."""
    n, name = topo.ranks, topo.name.lower()
    m = re.fullmatch(r"(torus2d|mesh2d):(\d+)x(\d+)", name)
    if m:
        cols = int(m.group(3))
        return {r: (float(r % cols), -float(r // cols)) for r in range(n)}
    m = re.fullmatch(r"torus3d:(\d+)x(\d+)x(\d+)", name)
    if m:
        b, c = int(m.group(2)), int(m.group(3))
        return {r: ((r // (b * c)) * (c + 1.0) + r % c, -float((r // c) % b)) for r in range(n)}
    m = re.fullmatch(r"hypercube:(\d+)", name)
    if m:
        low = int(m.group(1)) // 2 + int(m.group(1)) % 2
        return {r: (float(_gray_rank(r & ((1 << low) - 1))), -float(_gray_rank(r >> low))) for r in range(n)}
    if re.fullmatch(r"line:\d+", name):
        return {r: (float(r), 0.0) for r in range(n)}
    if re.fullmatch(r"star:\d+", name):
        return {0: (0.0, 0.0), **{r: _circle(r - 1, n - 1) for r in range(1, n)}}
    if name in ("dgx1", "ndv2") and n == 8:
        return dict(_CUBE)
    if n <= 16 or is_switched(topo):
        return {r: _circle(r, n) for r in range(n)}
    import networkx as nx

    return {r: (float(x), float(y)) for r, (x, y) in nx.kamada_kawai_layout(topo.graph()).items()}


def _gray_rank(v: int) -> int:
    """Position of `v` in the reflected Gray code, so that hypercube neighbours along an axis are adjacent."""
    out = 0
    while v:
        out ^= v
        v >>= 1
    return out


def _circle(i: int, n: int) -> tuple[float, float]:
    a = math.pi / 2 - 2 * math.pi * i / max(1, n)
    return (math.cos(a), math.sin(a))


def _normalize(pos: Pos, width: float = 2.0) -> Pos:
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    return {r: ((x - cx) * width / span, (y - cy) * width / span) for r, (x, y) in pos.items()}


def _style(bandwidth: int, gbps: float | None, styles: dict[tuple[int, float | None], dict[str, Any]]
           ) -> dict[str, Any]:
    key = (bandwidth, gbps)
    if key not in styles:
        styles[key] = {"color": PALETTE[len(styles) % len(PALETTE)], "lw": 0.8 + 1.1 * min(bandwidth, 6)}
    return styles[key]


def _label(bandwidth: int, gbps: float | None, what: str = "") -> str:
    speed = f", {gbps:g} GB/s" if gbps else ""
    return f"{what}bandwidth {bandwidth}{speed}"


def _links(ax: Axes, topo: Topology, pos: Pos, ranks: range, styles: dict, legend: dict) -> None:
    """The links among `ranks`: one line for a pair linked both ways alike, an arrow otherwise."""
    inside = set(ranks)
    for link in topo.links:
        s, d = link.src, link.dst
        if s not in inside or d not in inside:
            continue
        back = topo.link(d, s)
        both = back is not None and back.bandwidth == link.bandwidth and back.gbps == link.gbps
        if both and s > d:
            continue
        st = _style(link.bandwidth, link.gbps, styles)
        (x0, y0), (x1, y1) = pos[s], pos[d]
        if both and _hidden(pos, s, d):
            # a wrap-around link of a torus or a hypercube would run straight through other ranks: an arc
            ax.annotate("", (x1, y1), (x0, y0), zorder=1, arrowprops={
                "arrowstyle": "-", "color": st["color"], "lw": st["lw"], "shrinkA": 11, "shrinkB": 11,
                "connectionstyle": "arc3,rad=-0.25"})
            # annotations do not count for autoscaling: make room for the top of the arc
            bulge = 0.5 * 0.25 * 1.1
            ax.update_datalim([((x0 + x1) / 2 + sign * bulge * (y1 - y0), (y0 + y1) / 2 - sign * bulge * (x1 - x0))
                               for sign in (1, -1)])
            line = None
        elif both:
            line, = ax.plot([x0, x1], [y0, y1], color=st["color"], lw=st["lw"], zorder=1, solid_capstyle="round")
        else:
            ax.annotate("", (x1, y1), (x0, y0), zorder=1, arrowprops={
                "arrowstyle": "-|>", "color": st["color"], "lw": st["lw"], "shrinkA": 11, "shrinkB": 11,
                "connectionstyle": "arc3,rad=0.12"})
            line = None
        legend.setdefault(_label(link.bandwidth, link.gbps), (st, line))


def _hidden(pos: Pos, s: int, d: int, radius: float = 0.15) -> bool:
    """Whether the straight line from s to d passes within `radius` of another rank."""
    (x0, y0), (x1, y1) = pos[s], pos[d]
    dx, dy = x1 - x0, y1 - y0
    length2 = dx * dx + dy * dy or 1e-12
    for r, (x, y) in pos.items():
        if r in (s, d):
            continue
        t = ((x - x0) * dx + (y - y0) * dy) / length2
        if 0 < t < 1 and math.hypot(x0 + t * dx - x, y0 + t * dy - y) < radius:
            return True
    return False


def _nodes(ax: Axes, pos: Pos, labels: dict[int, str], color: str, size: float = 0.13, box: bool = False) -> None:
    from matplotlib.patches import Circle, FancyBboxPatch

    for r, (x, y) in pos.items():
        if box:
            patch: Any = FancyBboxPatch((x - size * 1.6, y - size * 0.8), size * 3.2, size * 1.6,
                                        boxstyle="round,pad=0.02", fc=color, ec="#555555", zorder=3)
        else:
            patch = Circle((x, y), size, fc=color, ec="#3b6c8f", zorder=3)
        ax.add_patch(patch)
        ax.text(x, y, labels[r], ha="center", va="center", fontsize=8 if box else 9, zorder=4)


def _switch(ax: Axes, topo: Topology, pos: Pos, ranks: range, center: tuple[float, float], name: str,
            styles: dict, legend: dict) -> None:
    """One switch box linked to each rank by a spoke with the rank's switch-group bandwidth."""
    groups = {min(g.srcs): g for g in topo.switches if len(g.srcs) == 1}
    for r in ranks:
        g = groups.get(r)
        out = [l for l in topo.links if l.src == r and l.dst in ranks]
        bw = g.bandwidth if g is not None else max((l.bandwidth for l in out), default=1)
        gbps = out[0].gbps if out else None
        st = _style(bw, gbps, styles)
        line, = ax.plot([center[0], pos[r][0]], [center[1], pos[r][1]], color=st["color"], lw=st["lw"], zorder=1)
        legend.setdefault(_label(bw, gbps, "switch port: "), (st, line))
    _nodes(ax, {0: center}, {0: name}, SWITCH_COLOR, size=0.16, box=True)


def _draw_node(ax: Axes, topo: Topology, pos: Pos, ranks: range, styles: dict, legend: dict,
               switched: bool, switch_name: str = "switch") -> None:
    if switched:
        cx = sum(pos[r][0] for r in ranks) / len(ranks)
        cy = sum(pos[r][1] for r in ranks) / len(ranks)
        _switch(ax, topo, pos, ranks, (cx, cy), switch_name, styles, legend)
    else:
        _links(ax, topo, pos, ranks, styles, legend)
    _nodes(ax, {r: pos[r] for r in ranks}, {r: str(r) for r in ranks}, GPU_COLOR)


def draw_topology(topo: Topology, path: Path | str | None = None, node: Topology | None = None) -> Figure:
    """Draw `topo`; `node` is the one-node topology it was composed from (`--nodes N`), which lets the
    drawing group ranks by node and show the NICs and rails. Returns the Figure; writes it to `path`."""
    styles: dict[tuple[int, float | None], dict[str, Any]] = {}
    legend: dict[str, Any] = {}
    if node is not None and node.nics and topo.ranks % node.ranks == 0 and topo.ranks > node.ranks:
        fig = _multi_node(topo, node, styles, legend)
    else:
        pos = _normalize(layout(topo), 2.0 + topo.ranks / 16)
        xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
        width = 4.5 + min(5.0, topo.ranks / 8)
        aspect = (max(ys) - min(ys) + 0.6) / (max(xs) - min(xs) + 0.6)  # flat layouts get a flat figure
        fig = new_figure(width, max(3.2, width * min(1.0, aspect) + 1.0))
        ax = fig.add_subplot()
        _draw_node(ax, topo, pos, range(topo.ranks), styles, legend, is_switched(topo))
        ax.set_title(f"{topo.name}: {topo.ranks} ranks, {len(topo.links)} links"
                     + (f", {len(topo.switches)} switch groups" if topo.switches else ""))
    ax = fig.axes[0]
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=st["color"], lw=st["lw"], label=label) for label, (st, _) in sorted(legend.items())]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=min(3, len(handles)),
              fontsize=8, frameon=False)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.margins(0.08)
    ax.axis("off")
    save(fig, path)
    return fig


def _multi_node(topo: Topology, node: Topology, styles: dict, legend: dict) -> Figure:
    """Nodes side by side, each in a box with its GPUs (and switch), its NICs below, and one switch per
    rail under them that every NIC of that rail reaches."""
    from matplotlib.patches import FancyBboxPatch

    p, nodes = node.ranks, topo.ranks // node.ranks
    base = _normalize(layout(node), 2.0)
    width = max(2.9, 0.42 * len(node.nics), 0.2 * p)  # of a node's box: room for its NICs and GPUs
    gap = width + 0.35
    fig = new_figure(min(20.0, 1.5 + 1.45 * gap * nodes), 6.5)
    ax = fig.add_subplot()
    rails = sorted({n.rail for n in node.nics})
    rail_y = -3.6
    step = min(2.2, gap * nodes / max(1, len(rails)))
    rail_pos = {rail: ((nodes - 1) * gap / 2 + (k - (len(rails) - 1) / 2) * step, rail_y)
                for k, rail in enumerate(rails)}
    for i in range(nodes):
        ox = i * gap
        pos = {i * p + r: (x * width * 0.3 + ox, y * width * 0.3 + 0.15) for r, (x, y) in base.items()}
        ranks = range(i * p, (i + 1) * p)
        ax.add_patch(FancyBboxPatch((ox - width / 2, -2.45), width, 3.95, boxstyle="round,pad=0.05", fc="#f7f7f7",
                                    ec="#969696", zorder=0))
        ax.text(ox, 1.62, f"node {i} ({node.name}, ranks {i * p}..{(i + 1) * p - 1})", ha="center", fontsize=8)
        _draw_node(ax, topo, pos, ranks, styles, legend, is_switched(node), "NVSwitch")
        nic_pos = {k: (ox + (k - (len(node.nics) - 1) / 2) * ((width - 0.3) / max(1, len(node.nics))), -2.0)
                   for k in range(len(node.nics))}
        for k, nic in enumerate(node.nics):
            for r in sorted(set(nic.senders) | set(nic.receivers)):
                x, y = pos[i * p + r]
                ax.plot([x, nic_pos[k][0]], [y, nic_pos[k][1]], color="#bdbdbd", lw=0.6, zorder=0.5)
            st = _style(nic.bandwidth, nic.gbps, styles)
            rx, ry = rail_pos[nic.rail]
            line, = ax.plot([nic_pos[k][0], rx], [nic_pos[k][1], ry], color=st["color"], lw=st["lw"], ls="--",
                            zorder=0.8)
            legend.setdefault(_label(nic.bandwidth, nic.gbps, "NIC: "), (dict(st, ls="--"), line))
        _nodes(ax, nic_pos, {k: f"nic{k}" for k in nic_pos}, NIC_COLOR, size=0.08, box=True)
    _nodes(ax, dict(rail_pos), {rail: f"rail {rail}" for rail in rail_pos},
           SWITCH_COLOR, size=0.2, box=True)
    ax.set_title(f"{topo.name}: {nodes} nodes of {node.name} ({p} ranks each), {count(len(node.nics), 'NIC')} per "
                 f"node on {count(len(rails), 'rail')}")
    return fig
