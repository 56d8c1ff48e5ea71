"""VP901 invalid-suppression: a suppression comment names a rule that does not exist."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Rule


class InvalidSuppression(Rule):
    """The engine audits suppression comments itself; the rule carries the documentation and examples."""

    code = "VP901"
    name = "invalid-suppression"
    category = Category.ANALYSIS
    severity = SeverityByHeat.always(Severity.LOW)
    cost = "a suppression comment that names no rule verify-perf knows"
    summary = (
        "Reports a suppression comment (`# verify-perf: ignore[...]`, or a `VP` code in `# noqa: ...`) "
        "that names no rule, e.g. a typo such as `VP2O1`."
    )
    why = (
        "A mistyped code suppresses nothing, so the finding it was meant for is still reported, and "
        "the comment misleads every reader into thinking the line was reviewed. Codes of other "
        "linters in a shared `# noqa` (E501, F401) are left alone."
    )
    example = "for batch in loader:\n    print(loss.item())  # verify-perf: ignore[VP2O1]\n"
    use_instead = "for batch in loader:\n    print(loss.item())  # verify-perf: ignore[VP201]\n"
    fix = "Name the rule by its code (`verify-perf rule --all` lists them) or its name, or remove the comment."
    tokens = ()
    references = ("https://docs.astral.sh/ruff/rules/unused-noqa/",)

    VALID = (
        "x = 1  # noqa: E501\n",
        "x = 1  # verify-perf: ignore\n",
    )
    INVALID = (
        Invalid("x = 1  # verify-perf: ignore[VP2O1]\n", line=1, severity=Severity.LOW),
        Invalid("import os\n\ny = 2  # noqa: E501, VP9999\n", line=3, severity=Severity.LOW),
    )
