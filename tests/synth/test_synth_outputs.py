"""`smtcoll synth --xml` and `--prove`: the schedule as verified MSCCL XML, and re-checkable certificates."""

import json


def test_synth_writes_verified_xml_and_certificates(cli, tmp_path):
    xml, certs = tmp_path / "ag.xml", tmp_path / "certs"
    result = cli("synth", "-t", "ring:4", "-c", "allgather", "--xml", str(xml), "--prove", str(certs),
                 "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["steps"] == 2 and len(data["certificates"]) == 1
    assert data["certificates"][0]["claim"].endswith("finishes in at most 1 step(s) and at most 1 round(s)")
    verify = cli("verify", str(xml), "--format", "json")
    assert verify.returncode == 0 and json.loads(verify.stdout)[0]["runtimes"] == {"executor": True, "legacy": True}
    check = cli("proof", "check", str(certs))
    assert check.returncode == 0 and "1 ok" in check.stdout


def test_pareto_certificates_cover_every_claim(cli, tmp_path):
    certs = tmp_path / "certs"
    result = cli("synth", "-t", "ring:4", "-c", "allgather", "--strategy", "pareto", "--max-chunks", "2",
                 "--prove", str(certs), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    claims = [p for p in data["pruned"] if "claim" in p]
    assert claims and len(data["certificates"]) == len(claims)
    assert all(c["file"] for c in data["certificates"])
    assert cli("proof", "check", str(certs)).returncode == 0


def test_infeasible_instance_is_certified(cli, tmp_path):
    certs = tmp_path / "c"
    result = cli("synth", "-t", "star:4", "-c", "allgather", "--steps", "2", "--prove", str(certs))
    assert result.returncode == 1
    assert "certificate" in result.stdout and cli("proof", "check", str(certs)).returncode == 0


def test_synth_never_reports_an_xml_file_it_did_not_write(tmp_path, capsys, monkeypatch):
    """When the lowered program fails the checker, `synth --xml` says so and exits 4 (found, but the XML could
    not be written), and no file exists."""
    import pytest
    from helpers.lowering import break_lowering

    from smtcoll.cli import app, run_guarded

    break_lowering(monkeypatch)
    xml = tmp_path / "ag.xml"
    with pytest.raises(SystemExit) as exit_:
        run_guarded(app, ["synth", "-t", "ring:4", "-c", "allgather", "--xml", str(xml)])
    out, err = capsys.readouterr()
    assert exit_.value.code == 4 and not xml.exists()
    assert out.startswith("found:") and "written to" not in out and "not written" in err and "does not verify" in err
    assert "Traceback" not in out + err


def test_synth_xml_directory_exits_4_when_a_point_cannot_be_written(tmp_path, capsys, monkeypatch):
    """`--xml DIR`: a lowered program that fails the checker is not written, the schedules of -d are, and the
    exit code is 4 with the reason (as for `--xml FILE`)."""
    import json

    import pytest
    from helpers.lowering import break_lowering

    from smtcoll.cli import app, run_guarded

    break_lowering(monkeypatch)
    folder = tmp_path / "points"
    with pytest.raises(SystemExit) as exit_:
        run_guarded(app, ["synth", "-t", "ring:4", "-c", "allgather", "-d", str(folder), "--xml", str(folder),
                          "--format", "json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert exit_.value.code == 4 and "not written" in err and "does not verify" in err
    assert data["xml"]["written"] is False and "does not verify" in data["xml"]["error"]
    assert not list(folder.glob("*.xml")) and data["files"] == [str(p) for p in sorted(folder.glob("*.json"))]
    assert data["files"]
