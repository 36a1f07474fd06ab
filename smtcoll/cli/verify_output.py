"""What `smtcoll verify` prints: text for people, and two formats CI systems read (docs/ci.md).

- `junit`: JUnit XML (the schema GitHub test reporters, GitLab `artifacts:reports:junit` and Jenkins read):
  one `<testcase>` per file and declared mode (`in-place`, `out-of-place`); a wrong file's test case has a
  `<failure>` listing its errors, an unusable one an `<error>`; warnings go to `<system-out>`.
- `github`: GitHub Actions workflow commands (`::error file=F,line=L,title=T::message`) that show up as
  annotations on the lines of the pull request, with the escaping the runner requires.

The JSON format is `Report.to_json()` (docs/verify.md). Every format is deterministic: no times, no dates.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from smtcoll.check.report import Report, Violation

# Characters XML 1.0 cannot carry even escaped (control characters other than tab, newline, return).
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def describe(v: Violation) -> str:
    place = v.place()
    return f"{v.code}: {place + ': ' if place else ''}{v.message}"


def summary(reports: list[Report]) -> str:
    counts = {k: sum(1 for r in reports if r.verdict == k) for k in ("ok", "error", "unusable")}
    return (f"{len(reports)} file(s): {counts['ok']} verified, {counts['error']} wrong, "
            f"{counts['unusable']} unusable")


def format_text(reports: list[Report], verbose: bool = False) -> str:
    lines: list[str] = []
    for r in reports:
        head = f"{r.file}: {r.verdict}"
        facts = []
        if r.collective:
            facts.append(f"{r.collective}, {r.ranks} ranks")
        if r.runtimes is not None:
            facts.append("runtimes: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in sorted(r.runtimes.items())))
        if facts:
            head += f" ({'; '.join(facts)})"
        lines.append(head)
        for v in r.violations:
            if v.severity == "info" and not verbose:
                continue
            lines.append(f"  {v.severity:<7} {describe(v)}")
    lines.append(summary(reports))
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
        return [("schedule" if report.file.endswith(".json") else "program", list(report.violations))]
    return [(mode, [v for v in report.violations if v.where.get("mode", mode) == mode]) for mode in modes]


def format_junit(reports: list[Report], verbose: bool = False) -> str:
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


def format_github(reports: list[Report], verbose: bool = False) -> str:
    """One annotation per finding (errors, warnings; notices with `verbose`), then the summary line."""
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
    lines.append(summary(reports))
    return "\n".join(lines)


FORMATTERS = {"text": format_text, "junit": format_junit, "github": format_github}
