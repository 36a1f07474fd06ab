"""The table of collectives (smtcoll/collectives.py): every built-in spec file has a row and every row a spec
file, they say the same, and what a row declares (rooted, combining, buffer split, spellings, bus factor)
holds for the collective its expressions define."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from fractions import Fraction

import pytest
from helpers.paths import ROOT

from smtcoll import collectives, library
from smtcoll.check import buffers, postconditions
from smtcoll.lower import layout
from smtcoll.msccl.runtime import EXEC, LEGACY, PROFILES

SPEC_DIR = ROOT / "specs" / "collectives"
ROWS = [pytest.param(k, id=k.name) for k in collectives.TABLE]


def test_every_spec_file_has_a_row_and_every_row_a_spec_file():
    files = sorted(p.stem for p in SPEC_DIR.glob("*.toml"))
    assert files, f"no spec files under {SPEC_DIR}"
    assert files == sorted(collectives.NAMES)


@pytest.mark.parametrize("kind", ROWS)
def test_spec_file_says_what_the_row_says(kind):
    spec = tomllib.loads((SPEC_DIR / f"{kind.name}.toml").read_text())["collective"]
    assert spec == {"name": kind.name, "description": kind.description, "rooted": kind.rooted,
                    "chunks": kind.chunks, "pre": kind.pre, "post": kind.post, "address": kind.address}


@pytest.mark.parametrize("kind", ROWS)
@pytest.mark.parametrize("ranks", [2, 3, 5])
def test_row_declarations_hold_for_its_collective(kind, ranks):
    coll = library.collective(kind.name, ranks, 0 if kind.rooted else None)
    assert coll.is_combining == kind.combining
    assert (coll.root is not None) == kind.rooted
    # the buffers hold nchunksperloop chunks (the widest rank's addresses), or one rank's share of them
    pre_width = max(len({coll.address[c] for c in s}) for s in coll.pre_sets)
    post_width = max(len({coll.address[c] for c in s}) for s in coll.post_sets)
    loop = max(pre_width, post_width)
    assert kind.per_rank_loop == (loop == ranks)
    assert kind.input_share == (pre_width * ranks == loop)
    assert kind.output_share == (post_width * ranks == loop)


@pytest.mark.parametrize("kind", ROWS)
def test_spellings_are_what_the_runtimes_know(kind):
    for runtime, spelling in ((EXEC, kind.executor), (LEGACY, kind.legacy)):
        if spelling is not None:
            assert spelling in PROFILES[runtime].colls
    for s in kind.spellings:
        assert collectives.by_spelling(s) is kind
        assert s in postconditions.BUILTIN
        assert (s in postconditions.ROOTED) == kind.rooted
        assert (s in buffers.SPLIT_INPUT) == kind.input_share
        assert (s in buffers.SPLIT_OUTPUT) == kind.output_share


def test_names_and_aliases_resolve_to_their_row():
    for kind in collectives.TABLE:
        for name in (kind.name, *kind.aliases, kind.name.upper(), f" {kind.name} "):
            assert collectives.lookup(name) is kind
            assert library.collective_spec(name).name == kind.name
    assert collectives.lookup("allgatherv") is None


def test_bus_factors_are_nccl_tests():
    # nccl-tests src/*.cu getBw: allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast,
    # reduce 1
    assert collectives.bus_factor("allreduce", 8) == Fraction(7, 4)
    assert collectives.bus_factor("allgather", 8) == collectives.bus_factor("alltoall", 8) == Fraction(7, 8)
    assert collectives.bus_factor("reducescatter", 4) == Fraction(3, 4)
    assert collectives.bus_factor("broadcast", 8) == collectives.bus_factor("reduce", 8) == 1
    assert collectives.bus_factor("mine", 8) is None


def test_a_collective_no_runtime_names_is_laid_out_as_custom():
    assert set(layout.KINDS) == {k.name for k in collectives.TABLE if k.executor or k.legacy}


# The worked example of docs/architecture.md, "A new collective": one row (and its spec file), and the
# library, the lowering and the checker know it. Run in a fresh interpreter with the row added before any
# module reads the table.
NEW_ROW = '''
import smtcoll.collectives as c
row = c.CollectiveKind("shift", "rank r's chunk reaches rank r+1", "ranks", "rank == chunk",
                       "rank == (chunk + 1) % ranks", "chunk", rooted=False, combining=False,
                       executor=None, legacy=None, per_rank_loop=True, input_share=True, output_share=True,
                       bus_factor=c._share, aliases=("cyclic-shift",))
c.TABLE += (row,)
c.BY_NAME[row.name] = row
c.NAMES += (row.name,)
c.ALIASES.update({a: row.name for a in row.aliases})
'''
USE_IT = '''
from smtcoll import library
from smtcoll.check.schedule import check_schedule
from smtcoll.lower import lower, LowerOptions
from smtcoll.model import Schedule, Send, Step
coll = library.collective("cyclic-shift", 4)
topo = library.topology("ring:4")
sched = Schedule(topo, coll, [Step(1, [Send(r, r, (r + 1) % 4) for r in range(4)])])
print(check_schedule(sched).verdict, lower(sched, LowerOptions(runtime="legacy")).program.coll)
'''


def test_a_new_collective_is_one_row():
    run = subprocess.run([sys.executable, "-c", NEW_ROW + USE_IT], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["ok", "custom"]
