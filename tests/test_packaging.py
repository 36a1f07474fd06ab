"""The light install and the package: `verify` never imports the synthesizer's numerics, commands load
lazily, a missing extra says what to install, and the wheel carries LICENSE, py.typed and the spec files."""

from __future__ import annotations

import importlib
import os
import pkgutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import smtcoll
import smtcoll.cli
from smtcoll.cli import COMMANDS, app

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("z3", "scipy", "numpy", "networkx", "matplotlib", "cvc5")
# run the CLI in a fresh interpreter, then list the heavy packages it imported
PROBE = ("import sys\nfrom smtcoll.cli import main\nsys.argv = ['smtcoll'] + sys.argv[1:]\ntry:\n    main()\n"
         "except SystemExit:\n    pass\n"
         f"print('IMPORTED', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")


def cli(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`smtcoll ARGS` in a subprocess; `block` makes those packages look uninstalled."""
    code = "".join(f"import sys; sys.modules[{m!r}] = None\n" for m in block) + PROBE
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)


def test_verify_never_imports_the_numerics_or_the_solver(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from helpers.xmlgen import allgather2, write

    path = write(tmp_path, allgather2(), "a.xml")
    for args in (["verify", str(path)], ["verify", "--topology", "dgx1", "--format", "sarif", str(path)],
                 ["--help"], ["list"]):
        run = cli(*args)
        assert "IMPORTED []" in run.stdout, (args, run.stdout, run.stderr)


def test_without_the_synth_extra_synth_says_what_to_install() -> None:
    run = cli("synth", "-t", "dgx1", "-c", "allgather", "--strategy", "pareto", block=("z3",))
    assert "smtcoll synth needs z3-solver" in run.stderr and "pip install -e '.[synth]'" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    run = cli("bounds", "-t", "ring:4", "-c", "allgather", block=("networkx", "scipy"))
    assert "pip install 'smtcoll[synth]'" in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_every_command_is_registered_lazily() -> None:
    for module in pkgutil.iter_modules(smtcoll.cli.__path__):
        importlib.import_module(f"smtcoll.cli.{module.name}")
    names = {c.name or getattr(c.callback, "__name__", None) for c in app.registered_commands} | {
        g.name for g in app.registered_groups}
    assert names == set(COMMANDS)
    for name in COMMANDS.values():
        assert importlib.import_module(f"smtcoll.cli.{name}")  # the table names real modules


def test_one_version_source() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject
    from importlib.metadata import version

    assert version("smtcoll") == smtcoll.__version__


@pytest.mark.slow
def test_the_wheel_ships_license_types_and_specs(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            str(REPO), "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("smtcoll-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "smtcoll/py.typed" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "smtcoll/specs_data/topologies/dgx1.toml" in names
    assert "smtcoll/specs_data/collectives/allgather.toml" in names
    # installed into a fresh environment, `smtcoll list` names the spec files. The dependencies come from the
    # environment running the tests: its site-packages is appended to the new one's path by a .pth file
    # (`--system-site-packages` would expose the *base* interpreter's packages, which may lack typer). A
    # .pth file's own paths are not scanned for .pth files, so this environment's editable smtcoll stays out.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    (inner,) = (venv / "lib").glob("python3*/site-packages")
    (inner / "outer-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                             capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    listed = subprocess.run([str(py), "-m", "smtcoll", "list"], capture_output=True, text=True, cwd=tmp_path,
                            timeout=120, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("Spec files"))
    folder = Path(line.split(": ", 1)[1])
    assert folder.is_relative_to(venv) and (folder / "topologies" / "dgx1.toml").is_file()
