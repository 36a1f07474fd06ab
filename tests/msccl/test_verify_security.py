"""A hostile XML file cannot make `smtcoll verify` open files or sockets, expand entities, leak what it
points at, or run without bound in time or memory. The reader tests (test_msccl_reader.py) show that such
files are refused; these show that nothing was touched on the way, in every output format."""

from __future__ import annotations

import builtins
import io
import os
import signal
import socket
import tracemalloc
import urllib.request
from pathlib import Path

import pytest
from helpers.xmlgen import allgather2, write

from smtcoll.check.files import check_file
from smtcoll.check.program import check_program
from smtcoll.cli import app
from smtcoll.cli.app import run_guarded
from smtcoll.errors import InputError
from smtcoll.msccl.reader import read_program_bytes

SECRET = "smtcoll-secret-7f3a"
LOL = "".join(f'<!ENTITY lol{k} "{f"&lol{k - 1};" * 10}">' for k in range(1, 10))
HOSTILE = {
    "external entity": '<!DOCTYPE algo [<!ENTITY xxe SYSTEM "file://{secret}">]><algo name="&xxe;"/>',
    "external entity in text": '<!DOCTYPE algo [<!ENTITY xxe SYSTEM "{secret}">]><algo>&xxe;</algo>',
    "parameter entity": '<!DOCTYPE algo [<!ENTITY % p SYSTEM "file://{secret}"> %p;]><algo/>',
    "external DTD file": '<!DOCTYPE algo SYSTEM "file://{secret}"><algo/>',
    "external DTD url": '<!DOCTYPE algo SYSTEM "http://127.0.0.1:9/algo.dtd"><algo/>',
    "public DTD": '<!DOCTYPE algo PUBLIC "-//X//DTD X//EN" "http://127.0.0.1:9/x.dtd"><algo/>',
    "xinclude": ('<algo xmlns:xi="http://www.w3.org/2001/XInclude" name="x"><xi:include href="{secret}" '
                 'parse="text"/></algo>'),
    "billion laughs": '<!DOCTYPE algo [<!ENTITY lol0 "lol">' + LOL + ']><algo name="&lol9;"/>',
    "quadratic blowup": '<!DOCTYPE algo [<!ENTITY a "' + "x" * 100000 + '">]><algo name="' + "&a;" * 20000 + '"/>',
}


class Touched(AssertionError):
    pass


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(SECRET + "\n")
    return path


@pytest.fixture
def seal(monkeypatch):
    """`seal(*paths)`: from then on no socket, no URL, no file may be opened except `paths`."""
    allowed: set[str] = set()
    real_open = builtins.open
    real_os_open = os.open

    def guard_open(file, *args, **kwargs):
        if os.fspath(file) not in allowed if isinstance(file, (str, os.PathLike)) else True:
            raise Touched(f"opened {file!r}")
        return real_open(file, *args, **kwargs)

    def no_socket(*args, **kwargs):
        raise Touched("opened a socket")

    def no_url(*args, **kwargs):
        raise Touched("opened a URL")

    def no_os_open(path, *args, **kwargs):
        if os.fspath(path) not in allowed:
            raise Touched(f"os.open {path!r}")
        return real_os_open(path, *args, **kwargs)

    def apply(*paths: Path) -> None:
        allowed.update(str(p) for p in paths)
        monkeypatch.setattr(builtins, "open", guard_open)
        monkeypatch.setattr(io, "open", guard_open)
        monkeypatch.setattr(os, "open", no_os_open)
        monkeypatch.setattr(socket, "socket", no_socket)
        monkeypatch.setattr(socket, "create_connection", no_socket)
        monkeypatch.setattr(urllib.request, "urlopen", no_url)
    return apply


@pytest.fixture
def bounded():
    """Fail instead of hanging: an alarm stops a run that does not end (no timing is asserted)."""
    def stop(*_):
        raise TimeoutError("the checker did not finish")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_xml_touches_nothing_and_leaks_nothing(name: str, secret: Path, seal, bounded) -> None:
    data = HOSTILE[name].replace("{secret}", str(secret)).encode()
    seal()
    tracemalloc.start()
    try:
        try:
            result = read_program_bytes(data, "hostile.xml")
        except InputError as e:
            message = str(e)
        else:  # accepted as XML (xinclude): checked like any program, the include is an ignored element
            report = check_program(result, "hostile.xml")
            message = " ".join(v.message for v in report.violations)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert SECRET not in message
    assert peak < 64 * 2**20  # no expansion: a few times the input at most


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("fmt", ["text", "json", "junit", "github"])
def test_no_output_format_leaks_the_file_an_entity_names(name: str, fmt: str, secret: Path, tmp_path: Path,
                                                         capsys) -> None:
    path = write(tmp_path, HOSTILE[name].replace("{secret}", str(secret)), "hostile.xml")
    with pytest.raises(SystemExit) as e:
        run_guarded(app, ["verify", "--format", fmt, str(path)])
    out, err = capsys.readouterr()
    assert e.value.code in (1, 2)
    assert SECRET not in out + err and "Traceback" not in out + err


def test_the_command_opens_only_the_file_it_checks(secret: Path, tmp_path: Path, seal) -> None:
    path = write(tmp_path, HOSTILE["external entity"].replace("{secret}", str(secret)), "hostile.xml")
    good = write(tmp_path, allgather2(), "good.xml")
    seal(path, good)
    report = check_file(str(path), "any", None, None, None)
    assert report.verdict == "unusable" and "DTD" in report.violations[0].message
    assert check_file(str(good), "any", None, None, None).verdict == "ok"
    with pytest.raises(Touched), open(secret):  # the guard itself works
        pass


def test_a_huge_attribute_list_or_value_is_bounded(tmp_path: Path, bounded) -> None:
    many = "<algo " + " ".join(f'a{k}="{k}"' for k in range(100000)) + "/>"
    long = '<algo name="' + "x" * (8 * 2**20) + '"/>'
    for text in (many, long):
        report = check_file(str(write(tmp_path, text, "big.xml")), "any", None, None, None)
        assert report.verdict in ("error", "unusable")
        assert all(len(v.message) < 2000 for v in report.violations)
