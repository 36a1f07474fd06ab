"""Start-up: each command imports what it uses and nothing else (docs/benchmarks.md has the timings).

Not a timing test: a fresh interpreter runs the command and lists the modules it imported; a module a
command does not need (the solver, the numerics, the lowering, the pictures, the sweep's scheduler) fails
the test whatever the machine's load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = """import json, sys
from smtcoll.__main__ import main
sys.argv = ['smtcoll'] + sys.argv[1:]
code = 0
try:
    main()
except SystemExit as e:
    code = e.code or 0
sys.stderr.write('MODULES ' + json.dumps([code, sorted(sys.modules)]) + '\\n')
"""

SOLVER = ("z3", "cvc5")
NUMERICS = ("numpy", "scipy", "networkx")
PICTURES = ("matplotlib",)
SWEEP = ("dask", "distributed", "jsonschema")
LOWERING = ("smtcoll.lower",)
SYNTH = ("smtcoll.synth", "smtcoll.bounds", "smtcoll.proofs")
# typer 0.29 converts options through pydantic; plainly valid values skip it (smtcoll/cli/coercion.py)
PARSER_EXTRAS = ("pydantic", "pydantic_core")
# rich colours a terminal only (verify) and draws `--help`: a pipe or a file gets plain text without it
RICH = ("rich", "markdown_it", "pygments")
# defusedxml's SAX reader (only for a file the runtimes' reader refuses) pulls in urllib, http, ssl, email
NETWORK = ("urllib.request", "http", "ssl", "email")
# built-in names (ring:4, allgather) need no TOML parser or writer
TOML = ("tomllib", "tomli_w")
XML_READER = ("smtcoll.msccl.reader", "smtcoll.msccl.runtime_reader")
LIGHT = (*SOLVER, *NUMERICS, *PICTURES, *SWEEP, *PARSER_EXTRAS, *RICH, *NETWORK)

# command line -> the modules (and their submodules) it must not import
CASES = {
    ("--version",): ("typer", "click", "pydantic", "rich", "smtcoll.check", "smtcoll.specs", *SOLVER, *NUMERICS),
    ("verify", "examples/allgather-ring4.xml"): (*LIGHT, *LOWERING, *SYNTH, *TOML, "csv", "xml.etree"),
    ("verify", "examples/allgather-ring4.json"): (*LIGHT, *LOWERING, *SYNTH, *TOML),
    ("list",): (*LIGHT, *LOWERING, *SYNTH, *TOML, *XML_READER),
    ("show", "topology", "ring:4"): (*LIGHT, *LOWERING, *SYNTH, *TOML, *XML_READER),
    # the engine answers ring:4 at its bound: no solver (its translate method and the bounds are numpy's)
    ("synth", "-t", "ring:4", "-c", "allgather"): (*SOLVER, "scipy", "networkx", *PICTURES, *SWEEP, *PARSER_EXTRAS,
                                                    *RICH, *NETWORK, *LOWERING, *TOML, *XML_READER,
                                                    "smtcoll.synth.exact", "smtcoll.proofs"),
    # an instance the exact search answers: the solver, but not the lowering, the pictures or the sweep
    ("synth", "-t", "ring:4", "-c", "allgather", "--steps", "2"): (*PICTURES, *SWEEP, *PARSER_EXTRAS, *NETWORK,
                                                                    *LOWERING, *XML_READER, "smtcoll.proofs"),
    ("lower", "examples/allgather-ring4.json", "-o", "{tmp}/a.xml"): (*LIGHT, *SYNTH, *TOML),
    # the help lists every command: their modules, not their solvers, numerics, pictures or scheduler
    ("--help",): (*SOLVER, *NUMERICS, *PICTURES, *SWEEP, *PARSER_EXTRAS),
}


def imported(args: tuple[str, ...], tmp: Path) -> list[str]:
    run = subprocess.run([sys.executable, "-c", PROBE, *(a.format(tmp=tmp) for a in args)], capture_output=True,
                         text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    line = next((x for x in run.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, run.stderr
    code, modules = json.loads(line.removeprefix("MODULES "))
    assert code == 0, run.stderr  # a command that failed early would import little and prove nothing
    return list(modules)


@pytest.mark.parametrize("args", list(CASES), ids=" ".join)
def test_a_command_imports_only_what_it_uses(args: tuple[str, ...], tmp_path: Path) -> None:
    modules = imported(args, tmp_path)
    unneeded = sorted(m for m in modules for banned in CASES[args] if m == banned or m.startswith(banned + "."))
    assert not unneeded, f"smtcoll {' '.join(args)} imports {unneeded[:10]}"
