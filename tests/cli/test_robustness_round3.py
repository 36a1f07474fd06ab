"""Every command answers, round 3 (issue 22): hostile files, faults, the API and what a new user trips over.

Each test reproduces one class of defect with a small input and runs it through the same guard as the
`smtcoll` executable (`run_guarded`), so that a traceback or a wrong exit code shows here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.paths import ROOT

from smtcoll.cli import app
from smtcoll.cli.app import run_guarded

if TYPE_CHECKING:
    from smtcoll.sweep.cache import Cache
    from smtcoll.sweep.tasks import Task

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


# --- 8: reader crashes are bad input with their place; 3: a tiny file cannot imply huge work ---------------

FORMATS = EXAMPLES / "formats"
BIG = "1" * 5000


def _teccl(**changes: object) -> str:
    data = json.loads((FORMATS / "teccl-allgather-mesh2.json").read_text())
    data.update(changes)
    return json.dumps(data)


def _taccl(**topology: object) -> str:
    data = json.loads((FORMATS / "taccl-allgather-2x2.sccl.json").read_text())
    data["topology"].update(topology)
    return json.dumps(data)


def _csv(row: str) -> str:
    return (FORMATS / "allgather-ring4.csv").read_text().replace("0,0,1,0,20.5", row, 1)


HOSTILE_READS = {
    # name: (file name, text, what the message must say)
    "unicode digit in a CSV int": ("log.csv", _csv("0²,0,1,0,20.5"), "line 8: chunk"),
    "arabic digit in a CSV int": ("log.csv", _csv("٣,0,1,0,20.5"), "line 8: chunk"),
    "5000-digit CSV int": ("log.csv", _csv(f"{BIG},0,1,0,20.5"), "line 8: chunk"),
    "CSV field over 128 KiB": ("log.csv", _csv('0,0,1,0,"' + "9" * 140_000 + '"'), "line 8"),
    "5000-digit JSON int": ("log.json", '{"format": "smtcoll.transfers", "ranks": ' + BIG + "}", ":1:"),
    "TE-CCL volume '.'": ("te.json", _teccl(**{"7-Flows": ["0->1 with volume . in epoch 0"]}), "volume"),
    "TE-CCL unicode id": ("te.json", _teccl(**{"7-Flows": ["Chunk 0 from ٣ traveled over 0->1 in epoch 0"]}),
                          "7-Flows[0]"),
    "TE-CCL epoch 1e-320": ("te.json", _teccl(**{"1-Epoch_Duration": 1e-320}), "1-Epoch_Duration"),
    "TE-CCL bandwidth 1e308": ("te.json", _teccl(**{"5-Algo_Bandwidth": 1e308}), "5-Algo_Bandwidth"),
    "TACCL unicode GPU": ("t.sccl.json", _taccl(internode_conn={"²": [0]}), "internode_conn"),
    "ForestColl unicode root": ("f.xml", (FORMATS / "forestcoll-allgather-ring4.xml").read_text()
                                .replace('root="0"', 'root="²"', 1), "tree[0]"),
    # 3: the work a file implies
    "TE-CCL ids of a 1024-node mesh": ("te.json", _teccl(**{"7-Flows": [
        "Chunk 0 from 0 traveled over 0->1 in epoch 0", "Chunk 0 from 1022 traveled over 1022->1023 in epoch 0"]}),
        "1024 GPUs"),
    "TE-CCL ids of a huge NDv2": ("te.json", _teccl(**{"7-Flows": [
        "Chunk 0 from 1 traveled over 1->80000000 in epoch 0 via switches 0"]}), "80000000 GPUs"),
    "TACCL of 4096 ranks": ("t.sccl.json", _taccl(copies=4096, ngpus_per_node=1, node_links=[[0]],
                                                  node_invbws=[[0]], internode_conn={"0": [0]}), "4096 ranks"),
    "TACCL of 16 million links": ("t.sccl.json", _taccl(copies=512, internode_conn={"0": [0, 1], "1": [0, 1]}),
                                  "more than the 262144"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_READS))
def test_a_hostile_file_is_bad_input_with_its_place(tmp_path: Path, case: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import time

    name, text, place = HOSTILE_READS[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    cpu = time.process_time()
    # a TE-CCL file's machine is inferred from its ids when no --topology is given
    machine: list[str | Path] = [] if case.startswith("TE-CCL ids") else ["-t", FORMATS / "ring4.toml"]
    code, out, _ = cli(capsys, "verify", path, "--format", "json", *machine)
    assert time.process_time() - cpu < 5
    report = json.loads(out)[0]
    assert code == 2 and report["verdict"] == "unusable", report
    message = report["violations"][0]["message"]
    assert report["violations"][0]["code"] != "internal-error" and str(path) in message and place in message, message


def test_a_forestcoll_tree_of_10_to_the_12_chunks_is_read_in_its_bound(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import time

    path = tmp_path / "f.xml"
    path.write_text((FORMATS / "forestcoll-allgather-ring4.xml").read_text()
                    .replace('nchunks="1"', f'nchunks="{10**12}"', 1))
    cpu = time.process_time()
    code, out, _ = cli(capsys, "verify", path, "--format", "json", "-t", FORMATS / "ring4.toml")
    assert time.process_time() - cpu < 5
    report = json.loads(out)[0]
    assert code == 1 and "chunk-count" in {v["code"] for v in report["violations"]}


def test_a_5000_digit_xml_attribute_is_an_overflow_not_a_crash(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    xml = tmp_path / "a.xml"
    xml.write_text((EXAMPLES / "allgather-ring4.xml").read_text().replace('nchannels="', f'nchannels="{BIG}', 1))
    code, out, _ = cli(capsys, "verify", xml, "--format", "json")
    report = json.loads(out)[0]
    assert code in (1, 2) and "internal-error" not in {v["code"] for v in report["violations"]}


# --- 5: a TOML file whose keys imply quadratic work is refused before it is parsed -------------------------

@pytest.mark.parametrize("body", [
    ".".join(["a"] * 100_000) + " = 1",
    "x = {" + " . ".join(['"a"'] * 100_000) + " = 1}",
    "[" + ".".join(["t"] * 50_000) + "]",
    "ranks = " + "1" * 5000,
])
def test_a_spec_whose_keys_imply_huge_work_is_refused_early(tmp_path: Path, body: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import time

    spec = tmp_path / "t.toml"
    spec.write_text(f'# "a.b.c" in a comment is no key\n[topology]\nname = "x.y.z"\n{body}\n')
    cpu = time.process_time()
    code, _, err = cli(capsys, "show", "topology", spec)
    assert time.process_time() - cpu < 2
    assert code == 2 and f"{spec}:4:" in err and ("parts" in err or "4300 digits" in err)


def test_dotted_keys_of_a_few_parts_still_read(tmp_path: Path) -> None:
    from smtcoll.specs import MAX_KEY_PARTS, read_toml

    spec = tmp_path / "t.toml"
    key = ".".join(["k"] * MAX_KEY_PARTS)
    spec.write_text(f'{key} = 1\nv = "{".".join(["s"] * 1000)}"\n')
    data, _ = read_toml(spec)
    assert data["v"].count(".") == 999


# --- 7: internal errors that bad input reached ------------------------------------------------------------

@pytest.mark.slow
def test_a_directory_nested_1500_deep_is_walked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "top"
    levels = [str(deep)]
    for _ in range(1500):  # os.makedirs and shutil.rmtree recurse once per level too
        levels.append(os.path.join(levels[-1], "d"))
    for d in levels:
        os.mkdir(d)
    shutil.copy(EXAMPLES / "allgather-ring4.xml", os.path.join(levels[-1], "a.xml"))
    try:
        code, out, _ = cli(capsys, "verify", deep)
        assert code == 0 and "a.xml: ok" in out
        code, _, err = cli(capsys, "verify", f"{deep}/**")
        assert code in (0, 2) and "internal error" not in err
    finally:
        os.unlink(os.path.join(levels[-1], "a.xml"))
        for d in reversed(levels):
            os.rmdir(d)


@pytest.mark.parametrize("files", [{"a.toml": "a.toml"}, {"a.toml": "b.toml", "b.toml": "a.toml"},
                                   {"a.toml": "./a.toml"}])
def test_a_topology_that_is_its_own_node_is_refused(tmp_path: Path, files: dict[str, str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    for name, node in files.items():
        (tmp_path / name).write_text(f'[topology]\nname = "{name}"\nnode = "{node}"\n')
    code, _, err = cli(capsys, "show", "topology", tmp_path / "a.toml")
    assert code == 2 and "its own node" in err and "a.toml:3" in err


def test_a_collective_address_is_a_function_of_the_chunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "c.toml"
    body = '[collective]\nname = "c"\nchunks = "ranks"\npre = "rank == chunk"\npost = "true"\naddress = "{}"\n'
    spec.write_text(body.format("rank"))
    code, _, err = cli(capsys, "show", "collective", spec, "--ranks", "4")
    assert code == 2 and "address" in err and "'rank'" in err
    spec.write_text(body.format("chunk * 1000000000000000000"))
    code, _, err = cli(capsys, "bounds", "-t", "ring:4", "-c", spec)
    assert code == 2 and "address[1]" in err and "buffer slot" in err


# --- 2: a cache is an input: what leaves it is verified ---------------------------------------------------

def _cached_task(tmp_path: Path) -> tuple[Task, Cache, dict[str, Any]]:
    import hashlib

    pytest.importorskip("z3")
    from smtcoll.sweep.cache import Cache
    from smtcoll.sweep.plan import Request, make_tasks
    from smtcoll.sweep.sizes import SizeRange
    from smtcoll.sweep.tasks import Options, Task

    request = Request(("ring:4",), (1,), ("allgather",), Options(SizeRange(1024, 1 << 20), ("executor",)))
    task = make_tasks(request)[0]
    assert isinstance(task, Task), task
    text = (EXAMPLES / "allgather-ring4.xml").read_text()
    entry = {"status": "ok", "files": [{"name": "a.xml", "runtime": "executor", "collective": "allgather",
                                        "sha256": hashlib.sha256(text.encode()).hexdigest(), "xml": text}]}
    cache = Cache(tmp_path / "cache")
    cache.put(task.key(), entry)
    return task, cache, entry


def test_a_changed_cache_entry_is_computed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from smtcoll.sweep import run

    task, cache, entry = _cached_task(tmp_path)
    limits = run.Limits(60.0, 0)
    assert run.run_tasks([task], limits, run.Where(), cache)[task.key()]["files"][0]["xml"] == entry["files"][0]["xml"]

    class Recomputed(Exception):
        pass

    def no_cluster(where: object) -> None:
        raise Recomputed

    monkeypatch.setattr(run, "_client", no_cluster)
    text = entry["files"][0]["xml"]
    one_step_less = text.replace(text[text.index("<step "):text.index("\n", text.index("<step ")) + 1], "", 1)
    for xml, sha in ((one_step_less, entry["files"][0]["sha256"]),  # a step dropped, the hash kept
                     (one_step_less, hashlib.sha256(one_step_less.encode()).hexdigest()),  # and the hash redone
                     (text.replace("allgather", "allgathr"), entry["files"][0]["sha256"])):
        changed = {**entry, "files": [{**entry["files"][0], "xml": xml, "sha256": sha}]}
        cache.put(task.key(), changed)
        assert not run.trusted(task, {**changed, "key": task.key()})
        with pytest.raises(Recomputed):
            run.run_tasks([task], limits, run.Where(), cache)


# --- sweep faults: a garbage scheduler file, no workers, Ctrl-C, the dashboard ----------------------------

@pytest.mark.parametrize("text", ["garbage", "[1, 2]", '{"address": 7}', '{"id": "x"}', "\xff"])
def test_a_garbage_scheduler_file_is_bad_input(tmp_path: Path, text: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    pytest.importorskip("z3")
    f = tmp_path / "scheduler.json"
    f.write_text(text, encoding="latin-1")
    code, _, err = cli(capsys, "sweep", "-t", "ring:4", "-c", "allgather", "-o", tmp_path / "out",
                       "--scheduler-file", f)
    assert code == 2 and "--scheduler-file" in err and "internal error" not in err


@pytest.mark.slow
def test_a_sweep_whose_workers_never_come_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    import logging

    from distributed import LocalCluster

    from smtcoll.sweep import run
    from smtcoll.sweep.cache import Cache

    task, _, _ = _cached_task(tmp_path)
    monkeypatch.setattr(run, "WORKER_WAIT_S", 2.0)
    with (LocalCluster(n_workers=0, processes=False, dashboard_address=":0", silence_logs=logging.CRITICAL) as c,
          pytest.raises(run.ClusterError, match="no Dask worker joined")):
        run.run_tasks([task], run.Limits(60.0, 0), run.Where(scheduler=c.scheduler_address), Cache(None))


@pytest.mark.slow
def test_the_local_cluster_serves_no_dashboard_unless_asked(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    import socket
    import warnings

    from smtcoll.sweep import run

    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):  # already taken by someone else: the case to test
            busy.bind(("", 8787))
        busy.listen()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            client, cluster = run._client(run.Where(workers=1))
            try:
                assert cluster.scheduler.http_server.port != 8787  # an unused port of the system's choice
            finally:
                client.close()
                cluster.close()
    assert not [w for w in seen if "8787" in str(w.message)]


@pytest.mark.slow
def test_ctrl_c_during_a_sweep_exits_130_without_a_traceback(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "smtcoll", "sweep", "-t", "ring:8", "-c", "alltoall,allreduce",
                             "-o", str(tmp_path / "out"), "--workers", "1"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(12)  # the cluster is up and a task runs (the whole sweep takes about 40 s)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err


# --- 9: the API validates what the command line validates, with the same named exceptions ----------------

def test_the_api_refuses_what_the_command_line_refuses() -> None:
    import smtcoll
    from smtcoll import library
    from smtcoll.errors import UsageError

    xml = str(EXAMPLES / "allgather-ring4.xml")
    with pytest.raises(UsageError, match=r"--runtime.*bogus"):
        smtcoll.verify(xml, runtime="bogus")
    for bad in (None, 3, ["a.xml"]):
        with pytest.raises(UsageError, match="path"):
            smtcoll.verify(bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="topology"):
        smtcoll.verify(xml, topology=4)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="root"):
        smtcoll.verify(xml, root=-1)
    with pytest.raises(UsageError, match="did you mean 'allgather'"):
        smtcoll.verify(xml, collective="allgater")
    with pytest.raises(UsageError):
        smtcoll.load_topology(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        smtcoll.load_schedule(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="schedule"):
        smtcoll.lower_to_xml(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="topology"):
        smtcoll.lower_bounds(None, None)  # type: ignore[arg-type]
    # a name, as every other API function takes; any is the old spelling of auto
    assert smtcoll.verify(xml, topology="ring:4").verdict == "ok"
    assert smtcoll.verify(xml, topology="dgx1").verdict != "unusable"
    assert smtcoll.verify(xml, runtime="any").verdict == smtcoll.verify(xml, runtime="both").verdict == "ok"
    assert smtcoll.lower_bounds("ring:4", "allgather") == smtcoll.lower_bounds(
        library.topology("ring:4"), library.collective("allgather", 4))


def test_one_runtime_value_set_in_every_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    xml = EXAMPLES / "allgather-ring4.xml"
    for value in ("auto", "both", "any", "executor"):
        code, _, _ = cli(capsys, "verify", xml, "--runtime", value, "-q")
        assert code == 0, value
    schedule = EXAMPLES / "allgather-ring4.json"
    for value in ("auto", "any", "both"):
        code, _, err = cli(capsys, "lower", schedule, "-o", tmp_path / f"{value}.xml", "--runtime", value)
        assert code == 0, err
    legacy_refuses = tmp_path / "noname.xml"  # the legacy runtime needs `name`; the executor does not
    legacy_refuses.write_text(xml.read_text().replace('<algo name="', '<algo x="', 1))
    exits = {value: cli(capsys, "verify", legacy_refuses, "--runtime", value, "-q")[0]
             for value in ("auto", "any", "both", "executor", "legacy")}
    assert exits == {"auto": 0, "any": 0, "both": 1, "executor": 0, "legacy": 1}
    commands: tuple[list[str | Path], ...] = (["verify", xml], ["lower", schedule, "-o", tmp_path / "x.xml"])
    for command in commands:
        code, _, err = cli(capsys, *command, "--runtime", "bogus")
        assert code == 2 and "auto" in err and "both" in err


# --- new user: one declaration per shared option ----------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "1e9", "nan", "inf", "-1"])
def test_one_range_and_one_message_for_timeout(value: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("z3")
    pytest.importorskip("distributed")
    messages = set()
    for command in (["synth", "-t", "ring:4", "-c", "allgather"],
                    ["sweep", "-t", "ring:4", "-c", "allgather", "-o", tmp_path / "o"],
                    ["proof", "check", tmp_path]):
        code, _, err = cli(capsys, *command, "--timeout", value)
        assert code == 2, (command, err)
        messages.add(" ".join(err.replace("│", " ").split()).split("--timeout'")[-1].split("(7 days)")[0])
    assert len(messages) == 1 and "from 0.001 to 604800" in messages.pop()


def test_sweep_nodes_have_the_range_of_nodes_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("z3")
    pytest.importorskip("distributed")
    code, _, err = cli(capsys, "sweep", "-t", "ring:4", "-c", "allgather", "-o", tmp_path / "o", "--nodes", "1,65")
    assert code == 2 and "--nodes" in err and "1 to 64" in err
    code, _, err = cli(capsys, "bounds", "-t", "ring:4", "-c", "allgather", "--nodes", "65")
    assert code == 2 and "64" in err


# --- new user: help text and messages ----------------------------------------------------------------------

@pytest.mark.parametrize("command", [["verify"], ["lower"], ["bounds"], ["show", "topology"], ["proof", "check"],
                                     ["synth"]])
def test_help_shows_no_python_types_and_cuts_no_metavar(command: list[str], capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli(capsys, *command, "--help")
    assert code == 0
    assert "<bool>" not in out and "<list[" not in out and "legac" + "\n" not in out.replace(" ", "").replace("│", "")


def test_choice_errors_and_unknown_commands_read_plainly(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "verify", EXAMPLES / "allgather-ring4.xml", "--runtime", "bogus")
    assert code == 2 and "Value error" not in err and "'bogus' is not one of" in err
    code, _, err = cli(capsys, "synt")
    assert code == 2 and "did you mean 'synth'?" in err


def test_a_wrong_chunks_gets_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("z3")
    xml = tmp_path / "ag2.xml"
    code, _, err = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--chunks", "2", "--xml", xml)
    assert code == 0, err
    code, out, _ = cli(capsys, "verify", xml, "-c", EXAMPLES / "allgather.toml", "--chunks", "1")
    assert code == 1 and "chunks-hint" in out and "try --chunks 2" in out and "chunk(s)" not in out
    code, out, _ = cli(capsys, "verify", xml, "-c", EXAMPLES / "allgather.toml", "--chunks", "2")
    assert code == 0 and "chunks-hint" not in out


def test_json_outputs_name_their_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("z3")
    _, out, _ = cli(capsys, "verify", EXAMPLES / "allgather-ring4.xml", "--format", "json")
    assert json.loads(out)[0]["schema"] == "smtcoll-verify/1"
    _, out, _ = cli(capsys, "synth", "-t", "ring:4", "-c", "allgather", "--format", "json")
    assert json.loads(out)["schema"] == "smtcoll-synth/1"


def test_no_plot_says_why() -> None:
    from smtcoll.cli.sweep import _no_plot

    pytest.importorskip("matplotlib")
    assert "install matplotlib" not in _no_plot()


# --- 4: the transfers of a timed schedule are bounded (verify --max-pieces), before they are built --------

@pytest.mark.parametrize("name", ["allgather-ring4.csv", "teccl-allgather-mesh2.json", "taccl-allgather-2x2.sccl.json",
                                  "forestcoll-allgather-ring4.xml"])
def test_a_timed_schedule_over_the_transfer_limit_is_refused(name: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = FORMATS / name
    machine: list[str | Path] = ["-t", FORMATS / "ring4.toml"] if "forestcoll" in name else []
    code, out, _ = cli(capsys, "verify", path, "--format", "json", "--max-pieces", "3", *machine)
    report = json.loads(out)[0]
    assert code == 2 and "--max-pieces" in report["violations"][0]["message"], report
    code, out, _ = cli(capsys, "verify", path, "--format", "json", *machine)
    assert json.loads(out)[0]["verdict"] != "unusable"


def test_a_transfer_log_is_refused_before_its_rows_are_all_read(tmp_path: Path) -> None:
    import time

    from smtcoll.check.files import check_file
    from smtcoll.msccl.reader import Limits

    head = (FORMATS / "allgather-ring4.csv").read_text().split("chunk,src,dst,start,end")[0]
    log = tmp_path / "big.csv"
    log.write_text(head + "chunk,src,dst,start,end\n" + "".join(f"0,0,1,{t},{t + 1}\n" for t in range(300_000)))
    log_topology = tmp_path / "ring4.toml"
    shutil.copy(FORMATS / "ring4.toml", log_topology)
    cpu = time.process_time()
    report = check_file(str(log), "any", None, None, None, Limits(max_pieces=1000))
    assert time.process_time() - cpu < 3
    assert report.verdict == "unusable" and "--max-pieces limit of 1000" in report.violations[0].message
