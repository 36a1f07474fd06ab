"""`smtcoll list` and `smtcoll show`, run as a user runs them."""

import json

import pytest


def show(cli, *args):
    result = cli("show", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_dgx1(cli):
    d = show(cli, "topology", "dgx1")
    assert d["ranks"] == 8 and d["diameter"] == 2 and len(d["links"]) == 32
    nvlinks = {r: sum(l["bandwidth"] for l in d["links"] if l["src"] == r) for r in range(8)}
    assert set(nvlinks.values()) == {6}


def test_torus(cli):
    d = show(cli, "topology", "torus2d:4x4")
    assert d["ranks"] == 16 and d["diameter"] == 4 and d["degree"] == {"min": 4, "max": 4}


def test_dgx2_switch_groups(cli):
    d = show(cli, "topology", "dgx2")
    assert d["ranks"] == 16 and len(d["switches"]) == 32
    assert {len(g["srcs"]) * len(g["dsts"]) for g in d["switches"]} == {15}


def test_ndv2_two_nodes(cli):
    d = show(cli, "topology", "ndv2", "--nodes", "2")
    inter = [l for l in d["links"] if l["src"] // 8 != l["dst"] // 8]
    assert d["ranks"] == 16 and {(l["src"], l["dst"]) for l in inter} == {(0, 9), (8, 1)}
    assert all(l["gbps"] == 12.5 for l in inter)


def test_text_output(cli):
    out = cli("show", "topology", "dgx1").stdout
    assert "topology dgx1: 8 ranks, 32 directed links, diameter 2" in out and "0 -> 1x2, 2, 3, 4x2" in out


def test_show_collective(cli):
    d = show(cli, "collective", "alltoall", "--ranks", "4", "--chunks", "2")
    assert d["chunks"] == 2 and d["chunk_count"] == 32 and d["pre"]["1"] == list(range(8, 16)) and not d["combining"]
    d = show(cli, "collective", "reduce", "--ranks", "4", "--root", "2")
    assert d["root"] == 2 and d["combining"] and d["post"]["2"] == [0, 1, 2, 3] and d["post"]["0"] == []
    text = cli("show", "collective", "broadcast", "--ranks", "3", "--root", "1").stdout
    assert "collective broadcast on 3 ranks, root 1" in text


def test_list(cli):
    d = json.loads(cli("list", "--format", "json").stdout)
    names = {t["name"] for t in d["topologies"]}
    assert {"dgx1", "ndv2", "dgx2", "a100", "mi250", "amd8", "torus2d:AxB", "hypercube:D"} <= names
    assert [c["name"] for c in d["collectives"]] == ["broadcast", "reduce", "scatter", "gather", "allgather",
                                                     "alltoall", "reducescatter", "allreduce"]
    assert "hub-and-spoke:N" in cli("list").stdout


@pytest.mark.parametrize("args, message", [
    (["show", "topology", "nope"], "unknown topology 'nope'"),
    (["show", "topology", "ring:4", "--nodes", "2"], "no NIC model"),
    (["show", "collective", "allgather"], "needs the number of ranks"),
    (["show", "collective", "gather", "--ranks", "4", "--root", "9"], "root"),
    (["show", "collective", "allgather", "--ranks", "4", "--root", "1"], "takes no root"),
    (["show", "topology", "dgx1", "--format", "xml"], "Invalid value"),
    (["frobnicate"], "No such command"),
    (["show", "topology", "dgx1", "--draw", "/tmp/x.pdf"], "writes .png or .svg"),
])
def test_errors_are_messages_with_exit_2(cli, args, message):
    result = cli(*args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_draw(cli, tmp_path):
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    assert cli("show", "topology", "torus2d:3x3", "--draw", str(png)).returncode == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli("show", "topology", "dgx1", "--draw", str(svg)).returncode == 0
    assert b"<svg" in svg.read_bytes()


def test_module_and_deterministic_output(cli):
    a = cli("show", "topology", "a100", "--nodes", "2", "--format", "json").stdout
    b = cli("show", "topology", "a100", "--nodes", "2", "--format", "json").stdout
    assert a == b and json.loads(a)["ranks"] == 16
