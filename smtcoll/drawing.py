"""Drawing a topology to PNG or SVG with networkx and matplotlib (an optional dependency)."""

from __future__ import annotations

import io
from pathlib import Path

import networkx as nx

from smtcoll.errors import SmtcollError
from smtcoll.files import write_bytes
from smtcoll.model import Topology


def draw_topology(topo: Topology, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise SmtcollError(f"{path}: --draw writes .png or .svg files, not {suffix or 'files without a suffix'!r}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SmtcollError("--draw needs matplotlib: pip install 'smtcoll[draw]'") from None
    g = topo.graph()
    pos = nx.circular_layout(g) if topo.ranks <= 16 else nx.kamada_kawai_layout(g)
    fig, ax = plt.subplots(figsize=(7, 7))
    widths = [1 + 0.8 * (d["bandwidth"] - 1) for _, _, d in g.edges(data=True)]
    nx.draw_networkx(g, pos, ax=ax, node_color="#9ecae1", node_size=500, width=widths, arrows=True,
                     arrowsize=8, connectionstyle="arc3,rad=0.08")
    ax.set_title(f"{topo.name}: {topo.ranks} ranks, {len(topo.links)} links, {len(topo.switches)} switch groups")
    ax.axis("off")
    buffer = io.BytesIO()  # rendered in memory, then written safely (smtcoll/files.py)
    try:
        fig.savefig(buffer, format=suffix[1:], metadata={"Date": None} if suffix == ".svg" else None)
    finally:
        plt.close(fig)
    write_bytes(path, buffer.getvalue())
