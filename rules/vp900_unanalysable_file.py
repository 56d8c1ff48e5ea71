"""VP900 unanalysable-file: a file that cannot be read, decoded or parsed is reported, not skipped."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Rule


class UnanalysableFile(Rule):
    """The engine itself emits this finding; the rule carries its documentation and examples."""

    code = "VP900"
    name = "unanalysable-file"
    category = Category.ANALYSIS
    severity = SeverityByHeat.always(Severity.INFO)
    summary = "Reports a file that could not be analysed: unreadable, not valid text in its encoding, or a syntax error."
    why = (
        "A gate that silently skips a file it cannot read gives a clean report for code it never "
        "saw. The file is listed so that a reader knows the report does not cover it."
    )
    example = "def train(:\n    pass\n"
    use_instead = "def train():\n    pass\n"
    fix = "Fix the file so that Python can parse it, or exclude it."
    tokens = ()
    references = ("https://docs.python.org/3/reference/lexical_analysis.html#encoding-declarations",)

    VALID = ("x = 1\n",)
    INVALID = (
        Invalid("import torch\ndef train(:\n    pass\n", line=2, severity=Severity.INFO),
    )
