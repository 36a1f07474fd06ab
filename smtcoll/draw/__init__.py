"""Pictures with matplotlib (an optional dependency): topologies, schedules and Pareto frontiers.

Every function returns the matplotlib `Figure` (shown inline in a notebook) and writes it to `path` when
one is given. Figures are made with `matplotlib.figure.Figure`, not pyplot: no global state, no GUI
backend, and nothing to close. Output is deterministic: fixed layouts and seeds, and no dates in files.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from smtcoll.errors import SmtcollError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SUFFIXES = (".png", ".svg")


def new_figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SmtcollError("drawing needs matplotlib: pip install matplotlib (from a clone: "
                           "pip install -e '.[draw]')") from None
    return Figure(figsize=(width, height), layout="constrained")


def check_suffix(path: Path | str, option: str = "a picture") -> Path:
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise SmtcollError(f"{path}: {option} writes .png or .svg files, not "
                           f"{path.suffix or 'files without a suffix'!r}")
    return path


def save(fig: Figure, path: Path | str | None) -> None:
    """Write `fig` to a .png or .svg file (no-op for None); the SVG has no date and stable ids."""
    if path is None:
        return
    path = check_suffix(path)
    import matplotlib

    from smtcoll.files import write_bytes

    fmt = path.suffix.lower()[1:]
    buffer = io.BytesIO()  # rendered in memory, then written safely (atomic, non-regular targets refused)
    with matplotlib.rc_context({"svg.hashsalt": "smtcoll"}):
        fig.savefig(buffer, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else {"Software": None})
    write_bytes(path, buffer.getvalue())


def need_matplotlib(option: str, path: Path | None = None) -> None:
    """A clear message, before any work, when a picture is asked for in a format we do not write or
    matplotlib is not installed."""
    if path is not None:
        check_suffix(path, option)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SmtcollError(f"{option} needs matplotlib: pip install matplotlib (from a clone: "
                           "pip install -e '.[draw]')") from None
