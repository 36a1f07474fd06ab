"""The shell examples of the docs work from a plain clone: every file they read is in the repository
(mostly `examples/`), and the `$ smtcoll ...` examples run and print what the docs show."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTPUT_OPTIONS = {"-o", "--output", "-d", "--dir", "--xml", "--plot", "--prove", ">"}
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)


def commands() -> list[tuple[str, str, list[str], list[str]]]:
    """(doc, command line, its tokens, the output lines the doc shows after a `$ ` line) for every
    smtcoll command in a fenced block; synopsis lines (with [OPTIONS] or UPPERCASE placeholders) are skipped."""
    out = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            lines = block.splitlines()
            for i, line in enumerate(lines):
                shown = line.startswith("$ ")
                text = line[2:] if shown else line
                for part in re.split(r"&&", text):
                    part = part.split("  #")[0].strip().removeprefix("python -m ")
                    if not part.startswith("smtcoll ") or "[" in part or re.search(r"\b[A-Z]{4,}\b", part):
                        continue
                    shown_output = []
                    if shown:
                        for nxt in lines[i + 1:]:
                            if nxt.startswith("$ ") or not nxt.strip():
                                break
                            shown_output.append(nxt)
                    out.append((doc.name, part, shlex.split(part), shown_output))
    return out


def inputs_and_outputs(tokens: list[str]) -> tuple[list[str], list[str]]:
    ins, outs = [], []
    for prev, tok in zip(["", *tokens], tokens):
        if tok.startswith("-") or tok == ">":
            continue
        if prev in OUTPUT_OPTIONS:
            outs.append(tok)
        elif "/" in tok or tok.endswith((".xml", ".json", ".toml")):
            ins.append(tok)
    return ins, outs


def test_the_docs_have_examples() -> None:
    docs = {doc for doc, *_ in commands()}
    assert {"verify.md", "lower.md", "synth.md", "README.md"} <= docs


def test_every_file_a_doc_example_reads_is_in_the_repository() -> None:
    missing = []
    for doc in DOCS:
        made: set[str] = set()
        for name, line, tokens, _ in commands():
            if name != doc.name:
                continue
            ins, outs = inputs_and_outputs(tokens)
            missing += [f"{name}: {line}: {p}" for p in ins if p.rstrip("/") not in made and not (ROOT / p).exists()]
            made |= {o.rstrip("/") for o in outs}
    assert not missing, "\n".join(missing)


SHOWN = [(doc, line, tokens, shown) for doc, line, tokens, shown in commands() if shown]


@pytest.mark.parametrize("doc,line,tokens,shown", SHOWN, ids=[f"{d}: {c[:60]}" for d, c, _, _ in SHOWN])
def test_shown_examples_print_what_the_docs_show(doc, line, tokens, shown, tmp_path) -> None:
    """Run from a copy of examples/ (as in a clone) and compare the first line, which names the result."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    args = tokens[1:]
    if ">" in args:
        args = args[:args.index(">")]
    run = subprocess.run([sys.executable, "-m", "smtcoll", *args], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert "Traceback" not in run.stdout + run.stderr
    assert run.returncode in (0, 1), run.stderr
    assert run.stdout.splitlines()[0] == shown[0]
