"""`smtcoll show schedule`, the drawings (topologies, schedules, the Pareto plot) and the progress spinner."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from smtcoll import library
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded
from smtcoll.cli.progress import solver_progress
from smtcoll.draw.schedule import Timing, link_uses, schedule_table
from smtcoll.draw.topology import is_switched, layout
from smtcoll.formats import load_schedule
from smtcoll.model import Schedule, Send, Step
from smtcoll.synth.result import Attempt

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_guarded(app, list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def ring4() -> Schedule:
    """Allgather on ring:4 in 2 steps: each rank sends its chunk both ways, then forwards one."""
    topo = library.topology("ring:4")
    coll = library.collective("allgather", 4)
    first = [Send(r, r, (r + 1) % 4) for r in range(4)] + [Send(r, r, (r - 1) % 4) for r in range(4)]
    second = [Send((r - 1) % 4, r, (r + 1) % 4) for r in range(4)]
    return Schedule(topo, coll, [Step(1, first), Step(1, second)], "allgather-ring-4-s2-r2-c1")


# --- show schedule ---------------------------------------------------------------------------------------

def test_link_uses_count_sends_per_step_and_link() -> None:
    uses = link_uses(ring4())
    assert len(uses) == 12 and {u.step for u in uses} == {0, 1}
    assert all(len(u.chunks) == 1 and u.load == 1.0 for u in uses)
    assert next((u.src, u.dst, u.chunks) for u in uses if u.step == 1) == (0, 1, (3,))


def test_show_schedule_text_and_json(tmp_path: Path, capsys) -> None:
    path = tmp_path / "s.json"
    assert run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(path))[0] == 0
    code, out, _ = run(capsys, "show", "schedule", str(path))
    lines = out.splitlines()
    assert code == 0 and "2 steps, 2 rounds, 1 chunk per input, 12 sends; checker: ok" in lines[0]
    assert lines[1].split() == ["step", "rounds", "link", "bw", "sends", "load", "chunks"]
    assert len(lines) == 2 + 12  # one row per (step, link) used
    code, out, _ = run(capsys, "show", "schedule", str(path), "--format", "json")
    data = json.loads(out)
    assert data["verdict"] == "ok" and data["sends"] == 12 and len(data["per_step"]) == 2
    assert sum(len(s["links"]) for s in data["per_step"]) == 12
    assert data == {**schedule_table(load_schedule(path)), "file": str(path), "verdict": "ok"}


def test_show_schedule_of_an_unreadable_file_is_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    code, _, err = run(capsys, "show", "schedule", str(bad))
    assert code == 2 and str(bad) in err and "Traceback" not in err


def test_timeline_uses_the_alpha_beta_model() -> None:
    s = ring4()
    t = Timing.of(s, 1 << 20)  # ring:4 has no timing: one round per chunk per unit of bandwidth
    assert (t.alpha_us, t.round_us, t.unit) == (0.0, 1.0, "rounds") and t.starts(s) == [0.0, 1.0, 2.0]
    dgx = load_schedule_from_synth("dgx1")
    td = Timing.of(dgx, 1 << 20)
    assert td.unit == "us" and td.alpha_us == 0.7
    starts = td.starts(dgx)
    assert starts[-1] == pytest.approx(len(dgx.steps) * 0.7 + dgx.rounds * td.round_us)


def load_schedule_from_synth(topo: str) -> Schedule:
    from smtcoll.synth.exact import strategies

    result = strategies.least_steps(library.topology(topo), library.collective("allgather", 8), None, 1)
    assert result.schedule is not None
    return result.schedule


def test_show_schedule_draws_a_picture(tmp_path: Path, capsys) -> None:
    path, png = tmp_path / "s.json", tmp_path / "s.png"
    run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(path))
    code, out, _ = run(capsys, "show", "schedule", str(path), "--draw", str(png))
    assert code == 0 and png.read_bytes().startswith(PNG) and f"drawing written to {png}" in out
    code, _, err = run(capsys, "show", "schedule", str(path), "--draw", str(png))
    assert code == 2 and "--force" in err


def test_draw_schedule_returns_the_figure_and_svg_is_deterministic(tmp_path: Path) -> None:
    from smtcoll.draw.schedule import draw_schedule

    fig = draw_schedule(ring4())
    assert len(fig.axes) == 3  # usage heat map, its colour bar, timeline
    heat, timeline, _ = fig.axes
    assert [t.get_text() for t in heat.get_yticklabels()][:2] == ["0->1", "0->3"]
    assert timeline.get_title() == "timeline (alpha-beta model): 2 rounds in all"
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    draw_schedule(ring4(), a)
    draw_schedule(ring4(), b)
    assert a.read_bytes() == b.read_bytes()


# --- topologies --------------------------------------------------------------------------------------------

def test_layouts_show_the_structure() -> None:
    torus = layout(library.topology("torus2d:4x4"))
    assert torus[5] == (1.0, -1.0) and torus[15] == (3.0, -3.0)  # a 4x4 grid, row by row
    mesh = layout(library.topology("mesh2d:2x3"))
    assert mesh[4] == (1.0, -1.0)
    cube = layout(library.topology("dgx1"))
    outer = {r for r, (x, y) in cube.items() if abs(x) == 1.0}
    assert outer == {0, 1, 2, 3}  # the two NVLink quads are the outer and inner faces of the cube
    cube4 = layout(library.topology("hypercube:4"))
    for r in range(16):  # hypercube neighbours along the drawn axes are adjacent grid cells
        for b in range(4):
            (x0, y0), (x1, y1) = cube4[r], cube4[r ^ (1 << b)]
            assert (x0 == x1) or (y0 == y1)
    assert is_switched(library.topology("a100")) and not is_switched(library.topology("dgx1"))


def test_draw_topology_returns_a_figure_for_notebooks(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from smtcoll.draw.topology import draw_topology

    fig = draw_topology(library.topology("dgx1"))
    assert isinstance(fig, Figure)
    legend = fig.axes[0].get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["bandwidth 1, 25 GB/s", "bandwidth 2, 50 GB/s"]


def test_multi_node_drawing_groups_nodes_nics_and_rails(tmp_path: Path, capsys) -> None:
    png = tmp_path / "a100.png"
    code, _, _ = run(capsys, "show", "topology", "a100", "--nodes", "2", "--draw", str(png))
    assert code == 0 and png.read_bytes().startswith(PNG)
    from smtcoll.draw.topology import draw_topology

    fig = draw_topology(library.topology("a100", 2), node=library.topology("a100"))
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"NVSwitch", "nic0", "nic7", "rail 0", "rail 1"} <= texts
    assert any(t.startswith("node 1 (a100, ranks 8..15)") for t in texts)


def test_draw_rejects_other_formats_before_any_work(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "synth", "-t", "dgx1", "-c", "allgather", "--strategy", "pareto", "--plot",
                       str(tmp_path / "p.pdf"))
    assert code == 2 and "--plot writes .png or .svg files" in err


# --- Pareto plot ------------------------------------------------------------------------------------------------

def test_pareto_plot(tmp_path: Path, capsys) -> None:
    png = tmp_path / "pareto.png"
    code, out, _ = run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--strategy", "pareto", "--plot", str(png))
    assert code == 0 and png.read_bytes().startswith(PNG) and f"written: {png}" in out
    from smtcoll.draw.pareto import draw_pareto
    from smtcoll.synth.exact import strategies

    result = strategies.pareto(library.topology("ring:4"), library.collective("allgather", 4))
    ax = draw_pareto(result, "allgather on ring:4").axes[0]
    assert "(2, 3, 2)" in {t.get_text() for t in ax.texts}
    legend = ax.get_legend()
    assert legend is not None and any("lower bound: 2 steps" in t.get_text() for t in legend.get_texts())


# --- progress ---------------------------------------------------------------------------------------------------

def test_spinner_only_on_a_terminal(capsys) -> None:
    with solver_progress() as progress:  # pytest's stderr is not a terminal
        assert progress is None
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100, color_system=None)
    with solver_progress(console) as progress:
        assert progress is not None
        progress(Attempt(3, 7, 6, "sat", 1.25))
        progress(Attempt(2, None, 1, "unsat", 0.5))
    text = buf.getvalue()
    assert "steps   3  rounds <=    7  chunks  6" in text and "sat" in text and "rounds <=  any" in text
    assert "solver call" in text and "0:00:0" in text  # the spinner line with the elapsed time
