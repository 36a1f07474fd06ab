"""The human report: per collective, a table of size range -> algorithm -> predicted time -> gap to the
bound (rich), and a plot of predicted bus bandwidth against buffer size with the bound (matplotlib,
optional: without it the plot is skipped and the report says so)."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path
from typing import Any

from smtcoll.sweep.sizes import human


def _groups(manifest: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in manifest["files"]:
        groups[f["collective"]].append(f)
    return groups


def tables(manifest: dict[str, Any], width: int = 120) -> str:
    """The report as text (the same on a terminal and in `report.txt`, without colours)."""
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, highlight=False)
    runtimes = manifest["request"]["runtimes"]
    for kind, files in _groups(manifest).items():
        table = Table(title=f"{kind}", title_justify="left")
        for col in ("topology", "ranks", "sizes", "algorithm (steps, rounds, chunks)", "protocol", "instances",
                    "predicted", "gap to bound"):
            table.add_column(col, justify="right" if col in ("ranks", "instances") else "left")
        for f in files:
            if f["runtime"] != runtimes[0]:
                continue  # the same selection for every runtime
            lo, hi = f["predicted"][0], f["predicted"][-1]
            gaps = [p["gap"] for p in f["predicted"] if p.get("gap") is not None]
            i = f["instance"]
            table.add_row(f"{f['topology']} x{f['nodes']}", str(f["ranks"]),
                          f"{human(f['sizes'][0])}..{human(f['sizes'][1])}",
                          f"({i['steps']}, {i['rounds']}, {i['chunks']}) {f['method']}", f["protocol"],
                          str(f["instances"]), f"{lo['time_us']:.4g}..{hi['time_us']:.4g} µs",
                          f"{min(gaps):.0%}..{max(gaps):.0%}" if gaps else "no bound")
        console.print(table)
    failed = [t for t in manifest["tasks"] if t["status"] != "ok"]
    for t in failed:
        console.print(f"FAILED {t['collective']} on {t['topology']} x{t['nodes']}: {t['why']}")
    for t in manifest["tasks"]:
        for r in t["rejected"]:
            console.print(f"not used for {t['collective']} on {t['topology']} x{t['nodes']} ({r['runtime']}, "
                          f"{r.get('protocol')}, {r.get('instances')} instance(s)): {r['why']}")
    s = manifest["summary"]
    console.print(f"{s['files']} file(s) from {s['tasks']} task(s), {s['failed']} failed")
    return buf.getvalue()


def plot(manifest: dict[str, Any], path: Path) -> bool:
    """Predicted bus bandwidth against buffer size, one panel per collective, one line per topology and node
    count, the bound dashed. Returns False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = _groups(manifest)
    if not groups:
        return False
    runtime = manifest["request"]["runtimes"][0]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, (kind, files) in zip(axes[0], groups.items()):
        series: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in files:
            if f["runtime"] == runtime:
                series[f"{f['topology']} x{f['nodes']}"] += f["predicted"]
        for label, points in series.items():
            xs = [p["bytes"] for p in points if p["busbw_gbps"] is not None]
            line = ax.plot(xs, [p["busbw_gbps"] for p in points if p["busbw_gbps"] is not None], label=label)[0]
            bound = [(p["bytes"], p["bound_busbw_gbps"]) for p in points if p.get("bound_busbw_gbps") is not None]
            if bound:
                ax.plot(*zip(*bound), linestyle="--", color=line.get_color(), label=f"{label} bound")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("buffer size (bytes)")
        ax.set_ylabel("predicted bus bandwidth (GB/s)")
        ax.set_title(kind)
        ax.legend(fontsize="small")
    fig.tight_layout()
    # no timestamp in the file: the same manifest gives the same bytes
    fig.savefig(path, metadata={"Software": None} if path.suffix == ".png" else {"Date": None, "Creator": None})
    plt.close(fig)
    return True
