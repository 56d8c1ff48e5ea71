"""VP901 invalid-suppression: a suppression comment that cannot silence what it is written for."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Rule


class InvalidSuppression(Rule):
    """The engine audits suppression comments itself; the rule carries the documentation and examples."""

    code = "VP901"
    name = "invalid-suppression"
    category = Category.ANALYSIS
    severity = SeverityByHeat.always(Severity.LOW)
    cost = "a suppression comment that silences nothing it seems to"
    summary = (
        "Reports a suppression comment that silences nothing although it seems to: a code that names "
        "no rule (a typo such as `VP2O1`), a bare `# verify-perf: ignore` or `# verify-perf: noqa` "
        "(a suppression must name its rules), a blanket `# noqa` on a line with a finding, and, with "
        "`require-suppression-reason`, a suppression with no reason after its codes."
    )
    why = (
        "A gate's suppression must say which finding it accepts. A blanket `# noqa` is written for "
        "other linters every day, so it never silences a verify-perf finding; each of these comments "
        "leaves its finding reported, and misleads every reader into thinking the line was reviewed. "
        "Codes of other linters in a shared `# noqa` (E501, F401), and a blanket `# noqa` on a line "
        "with no finding of ours, are left alone."
    )
    example = "for batch in loader:\n    print(loss.item())  # verify-perf: ignore[VP2O1]\n"
    use_instead = "for batch in loader:\n    print(loss.item())  # verify-perf: ignore[VP201]\n"
    fix = "Name the rule by its code (`verify-perf rule --all` lists them) or its name, or remove the comment."
    tokens = ()
    references = ("https://docs.astral.sh/ruff/rules/unused-noqa/",)

    VALID = (
        "x = 1  # noqa: E501\n",
        "x = 1  # noqa\n",
    )
    INVALID = (
        Invalid("x = 1  # verify-perf: ignore[VP2O1]\n", line=1, severity=Severity.LOW),
        Invalid("import os\n\ny = 2  # noqa: E501, VP9999\n", line=3, severity=Severity.LOW),
        Invalid("x = 1  # verify-perf: ignore\n", line=1, severity=Severity.LOW),
        Invalid("# verify-perf: noqa\nx = 1\n", line=1, severity=Severity.LOW),
    )
