"""Every diagnostic code the checker's source can emit is registered in `smtcoll.check.codes` and
documented in docs/verify.md, and every registered code is emitted somewhere (no stale entry)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from smtcoll.check.codes import CODES
from smtcoll.vocabulary import SEVERITIES

ROOT = Path(__file__).resolve().parents[2]
KEBAB = re.compile(r"^[a-z]+(-[a-z0-9]+)*$")
EMITTERS = {"Violation", "Finding"}  # constructors whose first argument is the code
# the checker, and the readers whose findings become violations of the report (timed formats)
SOURCES = [*sorted((ROOT / "smtcoll" / "check").glob("*.py")), *sorted((ROOT / "smtcoll" / "msccl").glob("*reader.py")),
           *sorted((ROOT / "smtcoll" / "formats").glob("*.py"))]


def _code_helpers(tree: ast.Module) -> set[str]:
    """Functions of a module whose first parameter (after self) is named `code`: `_err`, `report`, `add`."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            params = [a.arg for a in node.args.args if a.arg != "self"]
            if params[:1] == ["code"]:
                out.add(node.name)
    return out


def emitted_codes() -> dict[str, str]:
    """code -> one place that emits it: string constants passed as the code to an emitter or a helper,
    passed as `code=`, or assigned to a variable named `code`."""
    found: dict[str, str] = {}
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        callees = EMITTERS | _code_helpers(tree)
        for node in ast.walk(tree):
            candidates: list[ast.expr] = []
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name in callees:
                    candidates += node.args[:1]
                candidates += [k.value for k in node.keywords if k.arg == "code"]
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code" for t in node.targets):
                candidates.append(node.value)
            for c in candidates:
                for leaf in ast.walk(c):
                    if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str) and KEBAB.match(leaf.value):
                        found.setdefault(leaf.value, f"{path.relative_to(ROOT)}:{leaf.lineno}")
    return found


def test_the_scan_sees_the_checker() -> None:
    codes = emitted_codes()
    assert {"deadlock", "race", "postcondition", "not-held", "internal-error", "parse-rule"} <= set(codes)


def test_every_emitted_code_is_registered() -> None:
    missing = {code: place for code, place in emitted_codes().items() if code not in CODES}
    assert not missing, f"register these in smtcoll/check/codes.py: {missing}"


def test_every_registered_code_is_emitted() -> None:
    stale = set(CODES) - set(emitted_codes())
    assert not stale, f"registered but never emitted: {sorted(stale)}"


def test_every_registered_code_is_documented() -> None:
    table = [line for line in (ROOT / "docs" / "verify.md").read_text().splitlines() if line.startswith("| `")]
    documented = {code for line in table for code in re.findall(r"`([a-z0-9-]+)`", line.split("|")[1])}
    assert not set(CODES) - documented, f"add to the table of docs/verify.md: {sorted(set(CODES) - documented)}"


def test_registry_entries_are_well_formed() -> None:
    for name, code in CODES.items():
        assert name == code.name and KEBAB.match(name) and code.doc and len(code.doc) < 110
        assert code.severities and set(code.severities) <= set(SEVERITIES)
