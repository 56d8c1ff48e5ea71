"""Command line: arguments in, exit code out. The work lives in verifier.static and verifier.report.

Exit codes: 0 nothing blocks (PASS), 1 a finding blocks the merge (BLOCK), 2 usage or internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from verifier import __version__
from verifier.config import Settings
from verifier.static.discovery import UsageError

EXIT_PASS, EXIT_BLOCK, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json")


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line (it already does) and never prints a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"verify-perf: error: {message}\n")


def _codes(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def build_check_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verify-perf",
        description="Pre-merge performance gate for PyTorch training code.",
        epilog="Subcommands: `verify-perf rule CODE` explains a rule. Exit codes: 0 PASS, 1 BLOCK, 2 error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to analyse")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    parser.add_argument("--select", type=_codes, action="extend", metavar="CODES",
                        help="comma-separated rule codes, prefixes (VP2) or names to enable (default: ALL)")
    parser.add_argument("--ignore", type=_codes, action="extend", default=[], metavar="CODES",
                        help="comma-separated rule codes, prefixes or names to disable")
    parser.add_argument("--exclude", type=_codes, action="extend", default=[], metavar="GLOBS",
                        help="extra comma-separated glob patterns of files or folders to skip")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings block")
    parser.add_argument("--version", action="version", version=f"verify-perf {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "rule":
            from verifier.report.rule_docs import run_rule_command

            return run_rule_command(args[1:])
        return _run_check(build_check_parser().parse_args(args))
    except UsageError as error:
        print(f"verify-perf: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("verify-perf: interrupted", file=sys.stderr)
        return EXIT_ERROR


def _run_check(args: argparse.Namespace) -> int:
    from verifier.report.decision import decide
    from verifier.report.json_format import render_json
    from verifier.report.text import render_text
    from verifier.static.engine import analyze_paths

    settings = Settings(
        select=tuple(args.select or ("ALL",)),
        ignore=tuple(args.ignore),
        exclude=tuple(args.exclude),
    )
    result = analyze_paths(args.paths, settings)
    findings = result.findings
    decision = decide(findings)
    if args.format == "json":
        output = render_json(findings, len(result.files), decision)
    else:
        output = render_text(findings, len(result.files), decision)
    if args.output:
        write_atomically(args.output, output)
    else:
        sys.stdout.write(output)
    for broken in result.internal_errors:
        print(f"verify-perf: {broken.path}: {broken.internal_error}", file=sys.stderr)
    if result.internal_errors:
        return EXIT_ERROR
    if decision.blocks and not args.exit_zero:
        return EXIT_BLOCK
    return EXIT_PASS


def write_atomically(path: str, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a report."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".verify-perf-", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
                stream.write(text)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None
