"""JUnit XML (`--format junit`), for CI systems that show test reports (GitLab's
`artifacts:reports:junit`, Jenkins, Azure Pipelines).

One test suite per analysed file, as ruff writes it: each finding is a test case that fails
(its `type` is the severity; its text the finding's lines with the heat note), a finding a
comment suppressed is a skipped test case, and a file without findings is one passing test case.
A first suite, `verify-perf`, holds the gate itself: a test case that fails when the merge is
blocked, with the reasons. Nothing depends on the clock, so the same run gives the same bytes.

XML 1.0 cannot hold most control characters, nor the lone surrogates that stand for the bytes of a
file name that is not UTF-8: each is written as its escape (`\\x1b`, `\\xe9`), never dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from verifier.findings import Finding
from verifier.report.file_names import markdown_safe
from verifier.report.model import Report
from verifier.report.text import finding_block

# Characters XML 1.0 does not allow (tab, line feed and carriage return are allowed).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_safe(text: str) -> str:
    text = markdown_safe(text)  # surrogates: the bytes they stand for, as `\xNN`
    return _NOT_XML.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def render_junit(report: Report) -> str:
    root = ET.Element("testsuites", name="verify-perf")
    suites = [_gate(report)]
    by_file: dict[str, list[tuple[Finding, bool]]] = {path: [] for path in report.files}
    for finding in report.findings:
        by_file.setdefault(finding.path, []).append((finding, False))
    for finding in report.suppressed:
        by_file.setdefault(finding.path, []).append((finding, True))
    suites += [_file_suite(path, sorted(entries), report) for path, entries in sorted(by_file.items())]
    for suite in suites:
        root.append(suite)
    _count(root, suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _gate(report: Report) -> ET.Element:
    suite = ET.Element("testsuite", name="verify-perf")
    case = ET.SubElement(suite, "testcase", classname="verify-perf", name="gate decision")
    if report.decision.blocks:
        reasons = list(report.decision.reasons)
        failure = ET.SubElement(case, "failure", type="BLOCK", message=xml_safe(f"BLOCK: {'; '.join(reasons)}"))
        failure.text = xml_safe("\n".join(reasons))
    return suite


def _file_suite(path: str, entries: list[tuple[Finding, bool]], report: Report) -> ET.Element:
    shown = xml_safe(path.replace("\\", "/"))
    suite = ET.Element("testsuite", name=shown, file=shown)
    if not entries:
        ET.SubElement(suite, "testcase", classname=shown, name="no findings", file=shown)
    for finding, suppressed in entries:
        case = ET.SubElement(
            suite, "testcase", classname=shown, file=shown, line=str(finding.shown_line),
            name=xml_safe(f"{finding.code} {finding.name} at {finding.location.removeprefix(finding.path + ':')}"),
        )
        if suppressed:
            ET.SubElement(case, "skipped", message="suppressed by a comment")
            continue
        failure = ET.SubElement(
            case, "failure", type=finding.severity.name, message=xml_safe(f"[{finding.severity.name}] {finding.message}"),
        )
        failure.text = xml_safe("\n".join(finding_block(finding, report)))
    return suite


def _count(root: ET.Element, suites: list[ET.Element]) -> None:
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(case.find("failure") is not None for case in cases),
            "errors": 0,
            "skipped": sum(case.find("skipped") is not None for case in cases),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
