"""The public API of `smtcoll/__init__.py`: its docstring examples run (they are the documentation), and
`import smtcoll` stays cheap."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import pytest

import smtcoll

ROOT = Path(__file__).resolve().parents[1]


def test_docstring_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples name files of examples/
    result = doctest.testmod(smtcoll, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 15 and result.failed == 0


def test_every_public_function_has_the_four_sections() -> None:
    for name in smtcoll.__all__:
        obj = getattr(smtcoll, name)
        if callable(obj) and getattr(obj, "__module__", "") == "smtcoll":
            for section in ("Parameters", "Returns", "Examples", "Notes"):
                assert f"\n    {section}\n    ---" in (obj.__doc__ or ""), (name, section)


def test_import_is_cheap() -> None:
    code = "import sys, smtcoll; print(sorted(m for m in ('z3', 'networkx', 'scipy', 'typer') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_names_resolve() -> None:
    assert smtcoll.Topology.__name__ == "Topology" and issubclass(smtcoll.NotVerified, smtcoll.SmtcollError)
    with pytest.raises(AttributeError):
        smtcoll.no_such_name  # noqa: B018
