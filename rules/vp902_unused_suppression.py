"""VP902 unused-suppression: a suppression comment that silenced nothing."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Rule


class UnusedSuppression(Rule):
    """The engine audits suppression comments itself; the rule carries the documentation and examples."""

    code = "VP902"
    name = "unused-suppression"
    category = Category.ANALYSIS
    severity = SeverityByHeat.always(Severity.LOW)
    cost = "a suppression comment that silences nothing"
    summary = (
        "Reports a suppression comment whose rule produced no finding on that line (like ruff's "
        "RUF100), or, for a file-level `# verify-perf: noqa: VP203`, in that file: the code moved, "
        "was fixed, or the comment is on the wrong line."
    )
    why = (
        "A stale suppression hides the next real finding on that line without anyone deciding to, "
        "so a gate can be silenced without a trace. Entries for rules that did not run on the file "
        "(not selected, or ignored for it) cannot be judged and are left alone, and so is a bare "
        "`# noqa`, which other linters share."
    )
    example = "for batch in loader:\n    loss.backward()  # noqa: VP201\n"
    use_instead = "for batch in loader:\n    loss.backward()\n"
    fix = "Remove the suppression, or move it to the line the finding is reported on."
    tokens = ()
    references = ("https://docs.astral.sh/ruff/rules/unused-noqa/",)

    VALID = (
        "x = 1  # noqa\n",
        "x = 1  # noqa: E501\n",
        "x = '# noqa: VP201'\n",
    )
    INVALID = (
        Invalid("x = 1  # verify-perf: ignore[VP201]\n", line=1, severity=Severity.LOW),
        Invalid("import torch\n\ny = 2  # noqa: VP203\n", line=3, severity=Severity.LOW),
        Invalid("# verify-perf: noqa: VP203\nimport torch\n", line=1, severity=Severity.LOW),
    )
