"""What `smtcoll verify` prints: text for people, and the formats CI systems read (docs/ci.md, docs/verify.md).

- `text`: one line per file with its verdict, one line per finding as `path:line: code: message` (the form
  compilers print, which editors, terminals and problem matchers link), a summary line; colours on a terminal.
- `junit`: JUnit XML (the schema GitHub test reporters, GitLab `artifacts:reports:junit` and Jenkins read):
  one `<testcase>` per file and declared mode (`in-place`, `out-of-place`); a wrong file's test case has a
  `<failure>` listing its errors, an unusable one an `<error>`; warnings go to `<system-out>`.
- `github`: GitHub Actions workflow commands (`::error file=F,line=L,title=T::message`) that show up as
  annotations on the lines of the pull request, with the escaping the runner requires.
- `sarif`: SARIF 2.1.0, the format of GitHub code scanning (`github/codeql-action/upload-sarif`) and of
  most static-analysis viewers.

The JSON format is `Report.to_json()` (docs/verify.md). Every format is deterministic: no times, no dates.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from smtcoll._version import __version__
from smtcoll.check.report import Report, Violation
from smtcoll.text import count

# Characters XML 1.0 cannot carry even escaped (control characters other than tab, newline, return).
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Findings that say a file could not be checked at all: never filtered away by --select/--ignore.
UNFILTERED = frozenset({"unusable", "internal-error"})
# rich styles of the text format (used only on a terminal, never in files or pipes)
_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan", "ok": "green", "unusable": "bold magenta",
          "path": "bold", "code": "bold"}


def describe(v: Violation) -> str:
    place = v.place()
    return f"{v.code}: {place + ': ' if place else ''}{v.message}"


def summary(reports: list[Report]) -> str:
    counts = {k: sum(1 for r in reports if r.verdict == k) for k in ("ok", "error", "unusable")}
    return (f"{len(reports)} file(s): {counts['ok']} verified, {counts['error']} wrong, "
            f"{counts['unusable']} unusable")


# ---------------------------------------------------------------------------------------------------
# Selecting findings (--select / --ignore)
def matches(code: str, selectors: Sequence[str]) -> bool:
    """A selector is a code or a prefix of codes, as in ruff: `parse` selects `parse-rule`, `post` both
    `postcondition` and `postcondition-unchecked`."""
    return any(code.startswith(s) for s in selectors)


def select_findings(reports: list[Report], select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[Report]:
    """Reports keeping only the findings selected (all when `select` is empty) and not ignored; the verdict
    follows (a file whose only errors are ignored is `ok`). A file that could not be read stays unusable."""
    if not select and not ignore:
        return reports

    def kept(v: Violation) -> bool:
        return v.code in UNFILTERED or ((not select or matches(v.code, select)) and not matches(v.code, ignore))

    return [attrs.evolve(r, violations=[v for v in r.violations if kept(v)]) for r in reports]


def strict_findings(reports: list[Report]) -> list[Report]:
    """`--strict`: every warning left after --select/--ignore counts as an error (info stays info)."""
    def harden(v: Violation) -> Violation:
        return attrs.evolve(v, severity="error") if v.severity == "warning" else v

    return [attrs.evolve(r, violations=[harden(v) for v in r.violations]) for r in reports]


def shown(v: Violation, verbose: bool) -> bool:
    return v.severity != "info" or verbose


# ---------------------------------------------------------------------------------------------------
# text
def location(file: str, v: Violation) -> str:
    """`path:line:column`, as far as known."""
    loc = file
    if isinstance(v.where.get("line"), int):
        loc += f":{v.where['line']}"
        if isinstance(v.where.get("column"), int):
            loc += f":{v.where['column']}"
    return loc


def _message(file: str, v: Violation) -> str:
    """The place within the file (mode, gpu, tb, step) and the message; a message that starts with the
    file's own location (readers' errors do) does not repeat it."""
    where = {k: x for k, x in v.where.items() if k not in ("line", "column")}
    place = attrs.evolve(v, where=where).place()
    text = v.message
    for prefix in (location(file, v) + ": ", file + ": "):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    return f"{place}: {text}" if place else text


def finding_line(file: str, v: Violation) -> tuple[str, str, str]:
    """(location, code with its severity, message): `path:30`, `race` or `max-bytes (warning)`, ..."""
    code = v.code if v.severity == "error" else f"{v.code} ({v.severity})"
    return location(file, v), code, _message(file, v)


def _plain(text: str) -> str:
    return text


def _q(q: dict) -> str:
    return f"{q['value']:.6g} {q['unit']}"


def time_lines(r: Report) -> list[str]:
    """Claimed, verified, alpha-beta and bound times side by side; the busiest links and switch groups."""
    out = []
    t = r.time
    if t:
        parts = [f"{label} {_q(q)} ({q.get('model', '')})" for key, label in (
            ("claimed", "claimed"), ("verified", "verified"), ("alpha_beta", "alpha-beta"), ("bound", "bound"))
            if (q := t.get(key))]
        if parts:
            out.append("  time: " + "; ".join(parts))
    est = r.metrics.get("estimate")
    if est and est.get("limited_by"):
        out.append(f"  estimate limited by {est['limited_by']} "
                   f"(links alone: {est['link_only_time']:.6g} {est['unit']})")
    links = r.metrics.get("links")
    if isinstance(links, list) and links:
        top = sorted(links, key=lambda x: (-x.get("chunks", 0), x.get("src", 0), x.get("dst", 0)))[:3]
        out.append("  busiest links: " + ", ".join(f"{x['src']}->{x['dst']} {count(x['chunks'], 'chunk')}"
                                                   for x in top))
    groups = r.metrics.get("switch_groups")
    if groups:
        out.append("  busiest switch groups: " + ", ".join(f"{g['group']} {count(g['chunks'], 'chunk')} "
                                                           f"{g['time']:.6g} us"
                                                           for g in groups[:3]))
    return out


def format_text(reports: list[Report], verbose: bool = False, quiet: bool = False, color: bool = False) -> str:
    """Each file's verdict line and its findings, then the summary. `quiet`: the findings only.
    `color`: rich console markup for a terminal (the caller prints it with a rich Console)."""
    escape: Callable[[str], str] = _plain
    if color:
        from rich.markup import escape as rich_escape  # only on a terminal: rich costs start-up time

        escape = rich_escape

    def style(text: str, name: str) -> str:
        return f"[{_STYLE[name]}]{escape(text)}[/]" if color else text

    lines: list[str] = []
    for r in reports:
        if not quiet:
            facts = []
            if r.collective:
                facts.append(f"{r.collective}, {r.ranks} ranks")
            if r.runtimes is not None:
                facts.append("runtimes: " + ", ".join(f"{k} {'yes' if v else 'no'}"
                                                      for k, v in sorted(r.runtimes.items())))
            lines.append(f"{style(r.file, 'path')}: {style(r.verdict, r.verdict)}"
                         + escape(f" ({'; '.join(facts)})" if facts else ""))
            lines += [escape(x) for x in time_lines(r)]
        for v in r.violations:
            if not shown(v, verbose):
                continue
            loc, code, message = finding_line(r.file, v)
            lines.append(f"{style(loc, 'path')}: {style(code, v.severity)}: {escape(message)}")
    if not quiet:
        lines.append(escape(summary(reports)))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# JUnit XML
def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _cases(report: Report) -> list[tuple[str, list[Violation]]]:
    """(test case name, its violations): one case per declared mode; findings without a mode (parse rules,
    connections, deadlock) belong to every mode."""
    if report.unusable:
        return [("read", list(report.violations))]
    modes = [m for m in report.metrics.get("modes", []) if isinstance(m, str)]
    if not modes:
        timed = report.format not in (None, "msccl-xml")
        return [("schedule" if timed or report.file.endswith(".json") else "program", list(report.violations))]
    return [(mode, [v for v in report.violations if v.where.get("mode", mode) == mode]) for mode in modes]


def format_junit(reports: list[Report], verbose: bool = False, quiet: bool = False) -> str:
    import xml.etree.ElementTree as ET  # here: only --format junit pays for it

    root = ET.Element("testsuites", name="smtcoll verify")
    suite = ET.SubElement(root, "testsuite", name="smtcoll verify")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for r in reports:
        for name, found in _cases(r):
            totals["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=_xml_text(r.file), name=_xml_text(f"{r.file} [{name}]"),
                                 file=_xml_text(r.file))
            errors = [v for v in found if v.severity == "error"]
            if errors:
                line = next((v.where["line"] for v in errors if isinstance(v.where.get("line"), int)), None)
                if line is not None:
                    case.set("line", str(line))
                kind = "error" if r.unusable else "failure"
                totals["errors" if r.unusable else "failures"] += 1
                head = errors[0]
                failure = ET.SubElement(case, kind, type=head.code, message=_xml_text(describe(head)[:1000]))
                failure.text = _xml_text("\n".join(f"{r.file}:{v.where['line']}: {describe(v)}"
                                                   if "line" in v.where else f"{r.file}: {describe(v)}"
                                                   for v in errors))
            rest = [v for v in found if v.severity == "warning" or (verbose and v.severity == "info")]
            if rest:
                ET.SubElement(case, "system-out").text = _xml_text("\n".join(f"{v.severity}: {describe(v)}"
                                                                            for v in rest))
    for element in (root, suite):
        for k, n in totals.items():
            element.set(k, str(n))
        element.set("skipped", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


# ---------------------------------------------------------------------------------------------------
# GitHub Actions workflow commands
def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(reports: list[Report], verbose: bool = False, quiet: bool = False) -> str:
    """One annotation per finding (errors, warnings; notices with `verbose`), then the summary line
    (not with `quiet`)."""
    command = {"error": "error", "warning": "warning", "info": "notice"}
    lines: list[str] = []
    for r in reports:
        for v in r.violations:
            if v.severity == "info" and not verbose:
                continue
            props = [f"file={_gh_property(r.file)}"]
            if isinstance(v.where.get("line"), int):
                props.append(f"line={v.where['line']}")
            props.append(f"title={_gh_property(f'smtcoll verify: {v.code}')}")
            lines.append(f"::{command[v.severity]} {','.join(props)}::{_gh_data(describe(v))}")
    if not quiet:
        lines.append(summary(reports))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# SARIF 2.1.0 (OASIS standard; tests/data holds its schema and a test validates this output against it)
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str) -> str:
    """A relative path stays relative (code scanning resolves it against the repository root, `%SRCROOT%`);
    an absolute path becomes a file: URI."""
    if os.path.isabs(path):
        return "file://" + urllib.parse.quote(path.replace(os.sep, "/"))
    return urllib.parse.quote(path.replace(os.sep, "/"))


def sarif_log(reports: list[Report], verbose: bool = False) -> dict[str, Any]:
    """One run of the tool `smtcoll`, a rule per finding code met, a result per finding shown."""
    codes = sorted({v.code for r in reports for v in r.violations if shown(v, verbose)})
    rule_index = {c: i for i, c in enumerate(codes)}
    results: list[dict[str, Any]] = []
    for r in reports:
        for v in r.violations:
            if not shown(v, verbose):
                continue
            artifact: dict[str, Any] = {"uri": _uri(r.file)}
            if not os.path.isabs(r.file):
                artifact["uriBaseId"] = "%SRCROOT%"
            physical: dict[str, Any] = {"artifactLocation": artifact}
            if isinstance(v.where.get("line"), int) and v.where["line"] >= 1:
                region = {"startLine": v.where["line"]}
                if isinstance(v.where.get("column"), int) and v.where["column"] >= 1:
                    region["startColumn"] = v.where["column"]
                physical["region"] = region
            result: dict[str, Any] = {"ruleId": v.code, "ruleIndex": rule_index[v.code],
                                      "level": _SARIF_LEVEL[v.severity],
                                      "message": {"text": _message(r.file, v)},
                                      "locations": [{"physicalLocation": physical}]}
            if v.where:
                result["properties"] = {"where": {k: v.where[k] for k in sorted(v.where)}, "verdict": r.verdict}
            results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "smtcoll",
                "version": __version__,
                "rules": [{"id": c, "name": c, "shortDescription": {"text": f"smtcoll verify: {c} (docs/verify.md)"}}
                          for c in codes],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the directory smtcoll ran in"}}},
            "results": results,
            "properties": {"summary": summary(reports)},
        }],
    }


def format_sarif(reports: list[Report], verbose: bool = False, quiet: bool = False) -> str:
    return json.dumps(sarif_log(reports, verbose), indent=2)


SCHEMA = "smtcoll-verify/1"  # the version of this JSON document's shape (docs/verify.md); `format` is the file's


def format_json(reports: list[Report], verbose: bool = False, quiet: bool = False) -> str:
    """Every finding, whatever `verbose` (scripts filter by severity themselves); each object names the
    schema it follows, so that a script can tell a later shape apart."""
    return json.dumps([{"schema": SCHEMA, **r.to_json()} for r in reports], indent=2)


FORMATTERS: dict[str, Callable[..., str]] = {"text": format_text, "json": format_json, "junit": format_junit,
                                              "github": format_github, "sarif": format_sarif}
