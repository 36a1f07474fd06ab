"""Property: `synth`, `bounds` and `show` answer any small topology (including disconnected and link-less
ones), any collective and any parameters with an exit code of the contract, no traceback, and `synth` ends
within its --timeout plus a margin (measured by the run's own clock, reported as "seconds")."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_robustness import CONTRACT, cli

from smtcoll import library

TIMEOUT = 1.0
MARGIN = 3.0  # the deadline is checked between phases and loop iterations; a loaded CI machine is slow

COLLECTIVES = sorted(library.COLLECTIVES)


@st.composite
def topologies(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, int]]]:
    ranks = draw(st.integers(2, 5))
    pairs = [(s, d) for s in range(ranks) for d in range(ranks) if s != d]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))  # may be empty
    return ranks, [(s, d, draw(st.integers(1, 2))) for s, d in chosen]


def _write(folder: Path, ranks: int, links: list[tuple[int, int, int]]) -> Path:
    p = folder / "t.toml"
    inline = ", ".join(f"{{src = {s}, dst = {d}, bandwidth = {b}}}" for s, d, b in links)
    p.write_text(f'[topology]\nname = "random"\nranks = {ranks}\nlinks = [{inline}]\n')
    return p


@st.composite
def synth_args(draw: st.DrawFn) -> list[str]:
    strategy = draw(st.sampled_from(["least-steps", "instance", "pareto"]))
    args = ["--strategy", strategy]
    if strategy == "instance":
        steps = draw(st.integers(1, 4))
        args += ["--steps", str(steps), "--rounds", str(draw(st.integers(steps, steps + 14)))]
    if strategy != "pareto":
        args += ["--chunks", str(draw(st.integers(1, 3)))]
    else:
        args += ["--max-chunks", str(draw(st.integers(1, 3)))]
    return args


def _collective(draw_name: str, root: int | None) -> list[str]:
    out = ["-c", draw_name]
    if library.COLLECTIVES[draw_name].rooted and root is not None:
        out += ["--root", str(root)]
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topo=topologies(), coll=st.sampled_from(COLLECTIVES), root=st.none() | st.integers(0, 5),
       args=synth_args())
def test_synth_always_answers(capsys, topo, coll, root, args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), *topo)
        code, out, _ = cli(capsys, "synth", "-t", path, *_collective(coll, root), *args,
                           "--timeout", str(TIMEOUT), "--format", "json")
    assert code in CONTRACT
    if code in (0, 1, 3) and out:
        data = json.loads(out)
        assert data["seconds"] <= TIMEOUT + MARGIN
        assert {0: "found", 1: "infeasible", 3: "timeout"}[code] == data["status"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topo=topologies(), coll=st.sampled_from(COLLECTIVES), root=st.none() | st.integers(0, 5),
       chunks=st.integers(1, 3))
def test_bounds_and_show_always_answer(capsys, topo, coll, root, chunks) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), *topo)
        code, out, _ = cli(capsys, "bounds", "-t", path, *_collective(coll, root), "--chunks", str(chunks),
                           "--no-lp", "--format", "json")
        assert code in CONTRACT
        code, out, _ = cli(capsys, "show", "topology", path, "--format", "json")
        assert code == 0 and json.loads(out)["ranks"] == topo[0]
    code, out, _ = cli(capsys, "show", "collective", coll, "-n", str(topo[0]), "--chunks", str(chunks),
                       *(["--root", str(root)] if root is not None else []))
    assert code in CONTRACT


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topo=topologies(), coll=st.sampled_from(COLLECTIVES), root=st.none() | st.integers(0, 5),
       args=synth_args())
def test_synth_always_answers_long(capsys, topo, coll, root, args) -> None:
    given_test: Any = test_synth_always_answers  # hypothesis adds `.hypothesis.inner_test`, untyped
    given_test.hypothesis.inner_test(capsys, topo, coll, root, args)
