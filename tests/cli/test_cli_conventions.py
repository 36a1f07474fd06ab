"""The command-line conventions a user of msccl-tools, pytest or ruff expects (docs/cli.md), run in-process."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from smtcoll import __version__
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded
from smtcoll.formats import load_schedule
from smtcoll.text import count, singular_unit


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run_guarded(app, list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def test_version(capsys) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"smtcoll {__version__}\n"


# --- -o refuses to overwrite; -f is --force ---------------------------------------------------------

def test_output_is_not_replaced_without_force(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ring.json"
    assert run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(out))[0] == 0
    out.write_text("keep me")
    code, _, err = run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(out))
    assert code == 2 and f"{out}: exists; use --force (-f) to replace it" in err
    assert out.read_text() == "keep me"
    assert run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(out), "-f")[0] == 0
    assert load_schedule(out).name == "allgather-ring-4-s2-r2-c1"


def test_lower_refuses_to_replace_the_xml(tmp_path: Path, capsys) -> None:
    sched, xml = tmp_path / "s.json", tmp_path / "a.xml"
    run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(sched))
    assert run(capsys, "lower", str(sched), "-o", str(xml))[0] == 0
    xml.write_text("old")
    code, _, err = run(capsys, "lower", str(sched), "-o", str(xml))
    assert code == 2 and "exists; use --force" in err and xml.read_text() == "old"
    assert run(capsys, "lower", str(sched), "-o", str(xml), "--force")[0] == 0 and xml.read_text() != "old"


@pytest.mark.parametrize("args", [["list", "-f", "json"], ["bounds", "-t", "ring:4", "-c", "allgather", "-f", "json"],
                                  ["verify", "-f", "json", "x.xml"]])
def test_format_has_no_short_option(capsys, args: list[str]) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2 and "No such option" in err


# --- choices and ranges are declared, so typer checks them ---------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["verify", "--runtime", "nccl", "x.xml"], "--runtime"),
    (["synth", "-t", "ring:4", "-c", "allgather", "--chunks", "0"], "--chunks"),
    (["synth", "-t", "ring:4", "-c", "allgather", "--max-chunks", "65"], "--max-chunks"),
    (["synth", "-t", "ring:4", "-c", "allgather", "--timeout", "0"], "--timeout"),
    (["synth", "-t", "ring:4", "-c", "allgather", "--steps", "0"], "--steps"),
    (["bounds", "-t", "ring:4", "-c", "allgather", "--nodes", "0"], "--nodes"),
    (["show", "collective", "allgather", "-n", "4", "--root", "-1"], "--root"),
])
def test_bad_values_are_usage_errors(capsys, args: list[str], option: str) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2 and f"Invalid value for '{option}'" in err and "Traceback" not in err


def test_lower_buffer_sizes_are_not_called_max_bytes(tmp_path: Path, capsys) -> None:
    sched = tmp_path / "s.json"
    run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "-o", str(sched))
    assert run(capsys, "lower", str(sched), "-o", str(tmp_path / "a.xml"), "--max-bytes", "4096")[0] == 2
    code, _, _ = run(capsys, "lower", str(sched), "-o", str(tmp_path / "a.xml"), "--runtime", "executor",
                     "--min-buffer-bytes", "1024", "--max-buffer-bytes", "4096")
    algo = ET.parse(tmp_path / "a.xml").getroot()
    assert code == 0 and (algo.get("minBytes"), algo.get("maxBytes")) == ("1024", "4096")


# --- did you mean -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, hint", [
    (["bounds", "-t", "ring:4", "-c", "allgater"], "did you mean 'allgather'?"),
    (["bounds", "-t", "torus2:4x4", "-c", "allgather"], "did you mean 'torus2d:4x4'?"),
    (["bounds", "-t", "hypercub:3", "-c", "allgather"], "did you mean 'hypercube:3'?"),
    (["bounds", "-t", "ring:4", "-c", "all-reduse"], "did you mean 'allreduce'?"),
    (["verify", "--collective", "allgater", "x.xml"], "did you mean 'allgather'?"),
])
def test_did_you_mean(capsys, args: list[str], hint: str) -> None:
    code, _, err = run(capsys, *args)
    assert code == 2 and hint in err


def test_no_suggestion_for_a_name_far_from_every_builtin(capsys) -> None:
    code, _, err = run(capsys, "bounds", "-t", "ring:4", "-c", "zzzz")
    assert code == 2 and "did you mean" not in err and "unknown collective 'zzzz'" in err


# --- text output --------------------------------------------------------------------------------------------

def test_bounds_columns_are_aligned_and_counts_agree(capsys) -> None:
    for topo in ("ring:2", "dgx1"):
        code, out, _ = run(capsys, "bounds", "-t", topo, "-c", "allgather", "--size", "1048576")
        rows = [line for line in out.splitlines()[1:] if line.startswith("  ")]
        assert code == 0 and len(rows) == 12  # 9 step/round bounds (holdings too), bus bandwidth, latency, time at size
        starts = {len(re.match(r"\s+\S+\s+", r).group(0)) for r in rows}  # type: ignore[union-attr]
        explanations = {re.search(r"\S(\s{2,})\S", r[min(starts):]).end(1) for r in rows}  # type: ignore[union-attr]
        assert len(starts) == 1 and len(explanations) == 1, out
    code, out, _ = run(capsys, "bounds", "-t", "ring:2", "-c", "allgather")
    assert ">= 1 step " in out and ">= 1 round " in out and "1 hop away" in out and "receive 1 chunk;" in out
    assert "(s)" not in out and "1 rounds" not in out and "1 hops" not in out


def test_plurals(capsys) -> None:
    assert [count(n, w) for n, w in ((1, "NIC"), (2, "NIC"), (1, "hop"), (3, "hop"), (2.0, "round"))] == \
        ["1 NIC", "2 NICs", "1 hop", "3 hops", "2 rounds"]
    assert singular_unit(1, "rounds per chunk") == "round per chunk" and singular_unit(2, "rounds") == "rounds"
    code, out, _ = run(capsys, "show", "topology", "ndv2")
    assert code == 0 and "(1 NIC, used with --nodes N)" in out


def test_xml_name_is_the_instance(tmp_path: Path, capsys) -> None:
    xml = tmp_path / "a.xml"
    code, _, _ = run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--xml", str(xml))
    assert code == 0 and ET.parse(xml).getroot().get("name") == "allgather-ring-4-s2-r2-c1"


# --- Pareto: every point in a folder -------------------------------------------------------------------

def test_pareto_dir_writes_every_point_named_after_its_instance(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "points"
    code, out, _ = run(capsys, "synth", "-t", "dgx1", "-c", "allgather", "--strategy", "pareto", "--max-chunks", "3",
                       "-d", str(folder), "--xml", str(folder), "--format", "json")
    data = json.loads(out)
    names = sorted(p.name for p in folder.iterdir())
    frontier = [f"allgather-dgx1-s{p['steps']}-r{p['rounds']}-c{p['chunks']}" for p in data["points"]]
    assert code == 0 and frontier == ["allgather-dgx1-s2-r3-c2", "allgather-dgx1-s3-r4-c3"]
    assert names == sorted([f + ".json" for f in frontier] + [f + ".xml" for f in frontier])
    assert sorted(data["files"]) == sorted(str(folder / n) for n in names)
    for f in frontier:
        s = load_schedule(folder / f"{f}.json")
        assert s.name == f and f"s{len(s.steps)}-r{s.rounds}-c{s.collective.chunk_factor}" in f
        assert ET.parse(folder / f"{f}.xml").getroot().get("name") == f
    assert run(capsys, "verify", str(folder))[0] == 0
    # a second run refuses to replace them, naming them all, and writes nothing
    code, _, err = run(capsys, "synth", "-t", "dgx1", "-c", "allgather", "--strategy", "pareto", "--max-chunks", "3",
                       "-d", str(folder))
    assert code == 2 and "exists (and" in err and "--force" in err


def test_plot_needs_pareto(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--plot", str(tmp_path / "p.png"))
    assert code == 2 and "--strategy pareto" in err


# --- help text: pinned typer, stable key lines --------------------------------------------------------------

COMMANDS = [[], ["list"], ["show", "topology"], ["show", "collective"], ["show", "schedule"], ["synth"], ["bounds"],
            ["lower"], ["verify"], ["proof", "check"]]

# option -> (short form, metavar): what `--help` must show for it, in every command that has it
SHARED = {"--topology": "-t NAME|FILE", "--collective": "-c NAME|FILE", "--root": "RANK [x>=0]",
          "--chunks": "C [1<=x<=64]", "--nodes": "N [1<=x<=64]", "--format": "text|json", "--force": "-f",
          "--runtime": None, "--timeout": "SECONDS", "--draw": "FILE.png|FILE.svg", "--output": "-o FILE"}


def option_rows(args: list[str], columns: int) -> dict[str, str]:
    out = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(columns)}, prog_name="smtcoll").output
    rows = {}
    for line in out.splitlines():
        m = re.match(r"│\s{0,4}\*?\s{0,4}(--[\w-]+)\s+(.*?)\s*│?$", line)  # not a wrapped help line
        if m:
            # the cells before the help text (the last cell; rich puts 2+ spaces between cells)
            rows[m.group(1)] = " ".join(re.split(r"\s{2,}", m.group(2))[:-1])
    return rows


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a) or "smtcoll")
def test_help_shows_declared_names_and_metavars(args: list[str]) -> None:
    rows = option_rows(args, 100)
    assert rows == option_rows(args, 180), "the option column must not depend on the terminal width"
    assert "--help" in rows
    for option, shown in rows.items():
        if option != "--help":
            assert not re.search(r"<[a-z]", shown), f"{option}: typer's type label instead of a metavar: {shown}"
        expected = SHARED.get(option)
        if expected is not None:
            assert shown.startswith(expected), (option, shown)


def test_help_snapshot_of_key_lines() -> None:
    synth = option_rows(["synth"], 100)
    assert synth["--strategy"] == "instance|least-steps|pareto"
    assert synth["--dir"] == "-d DIR" and synth["--xml"] == "FILE|DIR"
    assert option_rows(["lower"], 100)["--max-buffer-bytes"] == "BYTES [x>=0]"
    assert option_rows(["verify"], 100)["--runtime"] == "RUNTIME"
    assert option_rows(["verify"], 100)["--max-bytes"] == "BYTES [x>=1]"
    assert "--max-bytes" not in option_rows(["lower"], 100)


def test_typer_is_pinned_to_the_range_the_help_was_written_for() -> None:
    import tomllib
    from importlib.metadata import version

    deps = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    pins = [d for d in deps["dependencies"] if d.startswith("typer")]
    assert pins == ["typer>=0.29,<0.30"]
    assert version("typer").startswith("0.29.")
