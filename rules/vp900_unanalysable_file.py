"""VP900 unanalysable-file: a file that cannot be read, decoded, parsed or analysed is reported, not skipped."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Rule


class UnanalysableFile(Rule):
    """The engine and the worker pool emit this finding; the rule carries its documentation and examples.

    Its severity follows the reason, not the heat: HIGH (the default, shown below) when the file
    may be valid Python, INFO when it is not valid source or not a regular file.
    """

    code = "VP900"
    name = "unanalysable-file"
    category = Category.ANALYSIS
    severity = SeverityByHeat.always(Severity.HIGH)
    cost = "the file could not be analysed, so what it does is unknown"
    summary = (
        "Reports a file (or a folder) that was not analysed, once, with the reason. The gate fails closed: "
        "when the file may be valid Python that the analyser could not finish (the parser crashed or "
        "rejected code that Python accepts, the analysis ran out of memory or past --file-timeout, the file is larger than max-file-size, it or "
        "its folder could not be read), the finding is HIGH and blocks the merge. When the file is not "
        "valid source (a syntax error, bytes that do not decode in its encoding, brackets nested deeper "
        "than Python accepts) or not a regular file (a FIFO, a device, a socket, a dangling or looping "
        "link: never read), it is INFO: Python could not run it either. `unanalysable = \"warn\"` in "
        "[tool.verify-perf] makes the HIGH cases INFO."
    )
    why = (
        "A gate that skips what it cannot analyse passes code it never saw: one valid line that the "
        "parser cannot handle (a 500-term `and` chain, thousands of nested brackets) would otherwise hide "
        "every other finding in its file and turn BLOCK into PASS. Each such file is analysed in a worker "
        "process with a memory limit and a deadline, so it costs one finding, never the run; the other "
        "files' findings are kept. A file with a syntax error cannot run at all, so it is reported without "
        "blocking by default; a severity configured for the rule (`severity = { VP900 = \"HIGH\" }`) "
        "applies to every VP900, whatever the reason."
    )
    example = "def train(:\n    pass\n"
    use_instead = "def train():\n    pass\n"
    fix = (
        "Fix the file so that Python can parse it; for a valid file, split or simplify the code that stopped "
        "the analyser, raise the limit named in the message (--file-timeout, max-file-size), or exclude the file."
    )
    tokens = ()
    references = ("https://docs.python.org/3/reference/lexical_analysis.html#encoding-declarations",)

    VALID = ("x = 1\n",)
    INVALID = (
        Invalid("import torch\ndef train(:\n    pass\n", line=2, severity=Severity.INFO),
    )
