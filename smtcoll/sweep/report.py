"""The human report: per collective, a table of size range -> algorithm -> predicted time -> gap to the
bound (rich), and a plot of predicted bus bandwidth against buffer size with the bound (matplotlib,
optional: without it the plot is skipped and the report says so)."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path
from typing import Any


def _groups(manifest: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in manifest["files"]:
        groups[f["collective"]].append(f)
    return groups


def _time(us: float) -> str:
    """A time as people read it: 8.3 µs, 412 µs, 26.9 ms, 1.27 s."""
    if us < 1000:
        return f"{us:.3g} µs" if us < 100 else f"{us:.0f} µs"
    if us < 1e6:
        return f"{us / 1000:.3g} ms"
    return f"{us / 1e6:.3g} s"


def _size(n: int) -> str:
    """A size in the largest binary unit, rounded: 106667 -> 104KiB (exact ends are in the manifest)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f}{unit}" if v >= 10 or n % scale == 0 else f"{v:.1f}{unit}"
    return f"{n}B"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def tables(manifest: dict[str, Any], width: int = 120) -> str:
    """The report as text (the same on a terminal and in `report.txt`, without colours): per collective and
    machine, the size ranges with the chosen algorithm, and at the range's largest size its time, NCCL's
    best (ring or tree) in the same model, the throughput bound, and the ratios."""
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, highlight=False)
    runtimes = manifest["request"]["runtimes"]
    for kind, files in _groups(manifest).items():
        table = Table(title=f"{kind}", title_justify="left")
        for col, just in (("machine", "left"), ("sizes", "left"), ("algorithm", "left"), ("proto", "left"),
                          ("inst", "right"), ("time", "right"), ("busbw GB/s", "right"), ("NCCL", "right"),
                          ("vs NCCL", "right"), ("bound", "right"), ("of bound", "right")):
            table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
        for f in files:
            if f["runtime"] != runtimes[0] or f.get("mode", "outofplace") != "outofplace":
                continue  # the same selection for every runtime; out-of-place is what nccl-tests times
            at = f["predicted"][-1]
            nccl = [v for k, v in sorted(at.items()) if k.startswith("nccl_")]
            bound = at.get("bound_us")
            algo = f["algorithm"] if f.get("nccl") is None else f"NCCL {f['nccl']}"
            table.add_row(f"{f['topology']} x{f['nodes']}", f"{_size(f['sizes'][0])}..{_size(f['sizes'][1])}",
                          algo[:28], f["protocol"], str(f["instances"]), _time(at["time_us"]),
                          "-" if at["busbw_gbps"] is None else f"{at['busbw_gbps']:.1f}",
                          _time(min(nccl)) if nccl else "-", _ratio(at.get("vs_nccl")),
                          _time(bound) if bound else "-",
                          f"{bound / at['time_us']:.0%}" if bound else "-")
        console.print(table)
    console.print("out-of-place files (what nccl-tests times by default; the in-place ones are in the manifest); "
                  "time, busbw, NCCL and bound at the largest size of each range; vs NCCL: NCCL's best (ring or "
                  "tree) time / ours, NCCL lowered out of place too; of bound: the bound's time / ours (docs/sweep.md)")
    for line in below_bound(manifest):
        console.print(line, soft_wrap=True)
    failed = [t for t in manifest["tasks"] if t["status"] != "ok"]
    for t in failed:
        console.print(f"FAILED {t['collective']} on {t['topology']} x{t['nodes']}: {t['why']}")
    for t in manifest["tasks"]:
        for r in t["rejected"]:
            console.print(f"not used for {t['collective']} on {t['topology']} x{t['nodes']} ({r['runtime']}, "
                          f"{r.get('mode', 'outofplace')}, "
                          f"{r.get('candidate')}{_chunks(r)}, {r.get('protocol')}, {r.get('instances')} instance(s)): "
                          f"{r['why'][:200]}", soft_wrap=True)
    s = manifest["summary"]
    console.print(f"{s['files']} file(s) from {s['tasks']} task(s), {s['failed']} failed")
    return buf.getvalue()


def _chunks(rejected: dict[str, Any]) -> str:
    """The refused candidate's chunk factor (" C=384"): a family offers several schedules under one name
    (`pairwise`, `forest`), told apart by their C; nothing for manifests written before the field."""
    return f" C={rejected['chunks']}" if "chunks" in rejected else ""


def below_bound(manifest: dict[str, Any]) -> list[str]:
    """A warning per file predicted faster than the proved bound at some size: no program runs below it, so
    the prediction, not the program, is wrong there (its time and ratio to NCCL are too good to trust)."""
    out = []
    for f in manifest["files"]:
        under = [p for p in f["predicted"] if p.get("bound_us") and p["time_us"] < p["bound_us"] * (1 - 1e-9)]
        if under:
            worst = max(under, key=lambda p: p["bound_us"] / p["time_us"])
            out.append(f"WARNING: {f['file']}: predicted below the proved bound ({_time(worst['time_us'])} against "
                       f"{_time(worst['bound_us'])} at {_size(worst['bytes'])}): the prediction undercuts how the "
                       f"program runs there, so its time and its ratio to NCCL are not to be trusted")
    return out


def _nccl_best_us(point: dict[str, Any]) -> float | None:
    """NCCL's fastest algorithm at this size in the same model (ring, tree or p2p), if the manifest has it."""
    times = [point[k] for k in ("nccl_ring_us", "nccl_tree_us", "nccl_p2p_us") if point.get(k)]
    return min(times) if times else None


def plot(manifest: dict[str, Any], path: Path) -> bool:
    """Predicted bus bandwidth against buffer size, one panel per collective, one line per topology and node
    count, the bound dashed, NCCL's best in the same model dotted. Returns False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = figure(manifest)
    if fig is None:
        return False
    # no timestamp in the file: the same manifest gives the same bytes
    fig.savefig(path, metadata={"Software": None} if path.suffix == ".png" else {"Date": None, "Creator": None})
    plt.close(fig)
    return True


def _style(one: bool, marker: str) -> dict[str, Any]:
    """A series of one point drawn as a marker; several as a plain line."""
    return {"marker": marker, "markersize": 9} if one else {}


def figure(manifest: dict[str, Any]) -> Any:
    """`plot`'s figure (matplotlib's, imported by the caller), None when there is nothing to draw. A series of
    one size (a sweep of one size, `--sizes 256MiB:256MiB`) is drawn as markers, one shape for each of the
    three: a line of one point is invisible."""
    import matplotlib.pyplot as plt

    groups = _groups(manifest)
    if not groups:
        return None
    runtime = manifest["request"]["runtimes"][0]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, (kind, files) in zip(axes[0], groups.items()):
        series: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in files:
            if f["runtime"] == runtime and f.get("mode", "outofplace") == "outofplace":
                series[f"{f['topology']} x{f['nodes']}"] += f["predicted"]
        for label, points in series.items():
            known = [p for p in points if p["busbw_gbps"] is not None]
            one = len({p["bytes"] for p in known}) == 1
            line = ax.plot([p["bytes"] for p in known], [p["busbw_gbps"] for p in known], label=label,
                           **_style(one, "o"))[0]
            bound = [(p["bytes"], p["bound_busbw_gbps"]) for p in points if p.get("bound_busbw_gbps") is not None]
            if bound:
                ax.plot(*zip(*bound), linestyle="--", color=line.get_color(), label=f"{label} bound",
                        **_style(one, "D"))
            nccl = [(p["bytes"], p["busbw_gbps"] * p["time_us"] / best) for p in known
                    if (best := _nccl_best_us(p)) is not None]
            if nccl:
                ax.plot(*zip(*nccl), linestyle=":", color=line.get_color(), label=f"{label} NCCL (same model)",
                        **_style(one, "x"))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("buffer size (bytes)")
        ax.set_ylabel("predicted bus bandwidth (GB/s)")
        ax.set_title(kind)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
