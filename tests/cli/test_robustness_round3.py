"""Every command answers, round 3 (issue 22): hostile files, faults, the API and what a new user trips over.

Each test reproduces one class of defect with a small input and runs it through the same guard as the
`smtcoll` executable (`run_guarded`), so that a traceback or a wrong exit code shows here.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from smtcoll.cli import app
from smtcoll.cli.app import run_guarded
from tests.helpers.paths import ROOT

EXAMPLES = ROOT / "examples"


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run `smtcoll ARGS` in-process through the CLI guard: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        run_guarded(app, [str(a) for a in args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    code = e.value.code if isinstance(e.value.code, int) else (0 if e.value.code is None else 2)
    assert "Traceback" not in out + err
    return code, out, err


# --- 1: output files never replace a device, a link, or an input ------------------------------------------

def _good_xml(tmp_path: Path) -> Path:
    xml = tmp_path / "algo.xml"
    shutil.copy(EXAMPLES / "allgather-ring4.xml", xml)
    return xml


def test_verify_output_file_refuses_a_device_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xml = _good_xml(tmp_path)
    fifo = tmp_path / "fifo"  # a FIFO stands for a device node: mknod of a char device needs root
    os.mkfifo(fifo)
    code, _, err = cli(capsys, "verify", xml, "--format", "json", "--output-file", fifo)
    assert code == 2 and "fifo" in err and "regular files only" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    code, _, err = cli(capsys, "verify", xml, "--output-file", "/dev/null")
    assert code == 2 and "/dev/null" in err and "device" in err


def test_verify_output_file_writes_through_a_symlink_and_keeps_it(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    xml = _good_xml(tmp_path)
    target, link, dangling = tmp_path / "report.json", tmp_path / "link.json", tmp_path / "dangling.json"
    target.write_text("old")
    link.symlink_to(target)
    dangling.symlink_to(tmp_path / "new-report.json")
    for out in (link, dangling):
        code, _, _ = cli(capsys, "verify", xml, "--format", "json", "--output-file", out)
        assert code == 0 and out.is_symlink()
    assert json.loads(target.read_text())[0]["verdict"] == "ok"
    assert json.loads((tmp_path / "new-report.json").read_text())[0]["verdict"] == "ok"


def test_verify_output_file_never_replaces_a_file_it_checks(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    xml = _good_xml(tmp_path)
    before = xml.read_bytes()
    alias = tmp_path / "alias.xml"
    alias.symlink_to(xml)
    for out in (xml, alias):
        code, _, err = cli(capsys, "verify", xml, "--output-file", out)
        assert code == 2 and "also an input" in err
    code, _, err = cli(capsys, "verify", tmp_path, "--output-file", xml)  # found by the directory walk
    assert code == 2 and "also an input" in err
    topo = tmp_path / "ring4.toml"
    shutil.copy(EXAMPLES / "ring4.toml", topo)
    code, _, err = cli(capsys, "verify", xml, "--topology", topo, "--output-file", topo)
    assert code == 2 and "also an input" in err
    assert xml.read_bytes() == before


def test_lower_never_replaces_its_own_input_even_with_force(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    schedule = tmp_path / "s.json"
    shutil.copy(EXAMPLES / "allgather-ring4.json", schedule)
    before = schedule.read_bytes()
    code, _, err = cli(capsys, "lower", schedule, "-o", schedule, "--force")
    assert code == 2 and "also an input" in err
    assert schedule.read_bytes() == before


# --- 11: a transfer log never makes verify read a file elsewhere -----------------------------------------

@pytest.mark.parametrize("key", ["collective", "topology"])
def test_a_transfer_logs_references_never_reach_outside_its_folder(tmp_path: Path, key: str,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    logdir, other = tmp_path / "logs", tmp_path / "other"
    logdir.mkdir()
    other.mkdir()
    shutil.copy(EXAMPLES / "formats" / "ring4.toml", logdir / "ring4.toml")
    shutil.copy(EXAMPLES / "formats" / "ring4.toml", other / "ring4.toml")
    shutil.copy(EXAMPLES / "allgather.toml", other / "allgather.toml")
    shutil.copy(EXAMPLES / "allgather.toml", other / "allgather")  # a spec without the .toml suffix
    good = (EXAMPLES / "formats" / "allgather-ring4.csv").read_text()
    original = {"collective": "allgather", "topology": "ring4.toml"}[key]
    monkeypatch.chdir(tmp_path)
    for ref in (f"{other}/{'allgather' if key == 'collective' else 'ring4'}.toml", "../other/allgather.toml",
                "other/allgather", "other/ring4.toml"):
        log = logdir / "log.csv"
        log.write_text(good.replace(f"# {key}: {original}", f"# {key}: {ref}"))
        opened: list[str] = []
        real_open = Path.read_bytes

        def spy(self: Path, _real=real_open, opened: list[str] = opened) -> bytes:
            opened.append(str(self.resolve()))
            return _real(self)

        monkeypatch.setattr(Path, "read_bytes", spy)
        code, out, _ = cli(capsys, "verify", log)
        monkeypatch.setattr(Path, "read_bytes", real_open)
        assert code == 2 and key in out, (ref, out)
        assert not [f for f in opened if f.startswith(str(other))], (ref, opened)
