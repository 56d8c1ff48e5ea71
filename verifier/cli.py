"""Command line: arguments in, exit code out. Parsing only: each subcommand's work lives in
its own module (`verifier.check`, `verifier.explain`, `verifier.dynamic.command`), which never
imports this one.

Exit codes (`verifier.errors`): 0 nothing blocks (PASS), 1 the merge is blocked (BLOCK), 2 usage
or internal error.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import sys
import time

from verifier import __version__
from verifier.config import parse_size
from verifier.static.parallel import MAX_JOBS
from verifier.static.cache import DEFAULT_CACHE_DIR
from verifier.errors import EXIT_ERROR, EXIT_PASS, UsageError
from verifier.extras import DYNAMIC, SERVER
from verifier.extras import require as require_extra
from verifier.integers import parse_whole, shown
from verifier.task import DEFAULT_REPORT_DIR
from verifier.stdin import STDIN
from verifier.stdout import discard_stdout, hold_standard_descriptors, require_stdout, write_stdout_safely

FORMATS = ("text", "concise", "json", "markdown", "sarif", "github", "gitlab", "junit")
# `verify-perf check PATH...` is `verify-perf PATH...`, as `ruff check` is ruff's.
CHECK_COMMAND = "check"


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line (it already does) and never prints a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"verify-perf: error: {message}\n")

    def _print_message(self, message: str, file=None) -> None:  # noqa: ANN001 - argparse's own signature
        """--help and --version meet standard output as every output does: a reader that has gone
        ends them quietly, a closed or full one is one line and exit 2 (not Python's "Exception
        ignored" at exit, status 120)."""
        if not message:
            return
        if file is not None and file is not sys.stdout:
            super()._print_message(message, file)
            return
        require_stdout("the help" if message.startswith("usage:") else "the version", "redirect it to a file")
        # Written here, not by argparse, which drops a failed write silently.
        write_stdout_safely(lambda: sys.stdout.write(message))


def _codes(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _min_score(text: str) -> int:
    try:
        return parse_whole(text, 0, 100)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


MIN_FILE_TIMEOUT, MAX_FILE_TIMEOUT = 0.1, 86_400.0


def _jobs(text: str) -> int:
    try:
        return parse_whole(text, 1, MAX_JOBS)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# ASCII digits, as for every number read (`float` also takes `٣`, `３` and `1_0`).
_DECIMAL = re.compile(r"\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*")


def _seconds(text: str) -> float:
    try:
        value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    except ValueError:
        value = math.nan
    # nan fails both comparisons; inf fails the upper bound.
    if not MIN_FILE_TIMEOUT <= value <= MAX_FILE_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds from {MIN_FILE_TIMEOUT:g} to {MAX_FILE_TIMEOUT:g}, got {shown(text)}"
        )
    return value


def _named(text: str) -> str:
    """A file, folder or git ref: an empty one (`--config "$UNSET"`) is a mistake, never "not given"."""
    if not text:
        raise argparse.ArgumentTypeError("expected a name, got an empty string")
    return text


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error}, got {shown(text)}") from None


def build_check_parser(harness_arguments: bool = False, prog: str = "verify-perf") -> argparse.ArgumentParser:
    """The check command's parser; the harness's own options join only with `--dynamic`,
    because loading them imports torch, which a static run never does."""
    parser = _Parser(
        prog=prog,
        description="Pre-merge performance gate for PyTorch training code.",
        epilog=(
            "Subcommands: `verify-perf check PATH...` is `verify-perf PATH...` (a folder named check is "
            "`./check`); `verify-perf rule CODE|PREFIX` explains rules; `verify-perf bench ...` runs the "
            "dynamic harness on its own; `verify-perf clean` removes the results caches; `verify-perf server` "
            "serves the findings to an editor (LSP). "
            "Exit codes: 0 PASS, 1 BLOCK, 2 error."
        ),
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to analyse (default: the working directory, `.`); `-` reads "
                             "the source from standard input (with --stdin-filename)")
    parser.add_argument("--stdin-filename", type=_named, metavar="NAME",
                        help="the file name of the source read from standard input: findings are reported "
                             "under it, and configuration and project heat are found from it; nothing is written")
    output = parser.add_argument_group("output")
    output.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text",
                        help="what to print on stdout (or write to --output); default: text. concise: one line "
                             "per finding; gitlab: a GitLab Code Quality report; junit: JUnit XML")
    output.add_argument("-o", "--output", metavar="FILE",
                        help="write the --format output to FILE instead of stdout (`-`: stdout; with --format "
                             "markdown, FILE is the report and nothing is written under --report-dir)")
    output.add_argument("--force", action="store_true",
                        help="replace an existing -o FILE or report that verify-perf did not write")
    output.add_argument("--task", metavar="ID",
                        help="task id: report title and file name (default: the first path's name)")
    output.add_argument("--report-dir", type=_named, metavar="DIR",
                        help=f"folder for the markdown report <task>.md (default: {DEFAULT_REPORT_DIR}; with "
                             "standard input, no report unless this is given)")
    output.add_argument("--no-report", action="store_true", help="do not write the markdown report file")
    output.add_argument("--date", metavar="YYYY-MM-DD",
                        help="date printed in the report (default: $SOURCE_DATE_EPOCH, else today in UTC)")
    output.add_argument("--sarif-category", metavar="ID",
                        help="SARIF: set automationDetails.id to ID/ (default: not set, so upload-sarif's "
                             "`category` input applies)")
    output.add_argument("--statistics", action="store_true",
                        help="print how many findings each rule produced at each heat (step, eval, epoch, once) "
                             "instead of the findings (with --format text or json)")
    output.add_argument("--show-settings", action="store_true",
                        help="print the effective settings (config file, selection, excludes, thresholds) and exit")
    output.add_argument("--show-files", action="store_true",
                        help="print the files that would be reported and exit")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="text and concise formats: print findings only, no summary; no 'report written' note")
    rules = parser.add_argument_group("rules and configuration")
    rules.add_argument("--config", type=_named, metavar="FILE",
                       help="read [tool.verify-perf] from FILE (default: the closest pyproject.toml "
                            "with that table, searching upwards from the first path)")
    rules.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    rules.add_argument("--select", type=_codes, action="extend", metavar="CODES",
                       help="comma-separated rule codes, prefixes (VP2) or names to enable (default: ALL)")
    rules.add_argument("--extend-select", type=_codes, action="extend", metavar="CODES",
                       help="comma-separated rule codes, prefixes or names to enable on top of the selection")
    rules.add_argument("--preview", action="store_true",
                       help="also run the rules still in preview (not yet precise enough on real code to gate by default)")
    rules.add_argument("--ignore", type=_codes, action="extend", default=[], metavar="CODES",
                       help="comma-separated rule codes, prefixes or names to disable")
    rules.add_argument("--exclude", "--extend-exclude", dest="exclude", type=_codes, action="extend", default=[],
                       metavar="GLOBS",
                       help="extra comma-separated glob patterns of files or folders to skip, added to the "
                            "default and configured excludes (a pattern with a '/' is relative to the working "
                            "directory; in the config file, to its folder)")
    rules.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
                       help="skip the files .gitignore and .ignore leave out (default; config: respect-gitignore); "
                            "a file named on the command line is always analysed")
    rules.add_argument("--force-exclude", action="store_true",
                       help="apply the excludes to files named on the command line too (the pre-commit hook uses this)")
    gate = parser.add_argument_group("gate")
    gate.add_argument("--diff", type=_named, metavar="BASE",
                      help="pre-merge mode: report only lines changed since the merge base with git ref BASE "
                           "(heat still comes from the whole project)")
    gate.add_argument("--heat-scope", choices=("project", "paths"), default="project",
                      help="project (default): heat comes from every file of the project (the config file's "
                           "folder, else the git top level) and only PATH is reported; paths: analyse PATH alone")
    gate.add_argument("--baseline", type=_named, metavar="FILE",
                      help="compare with a stored `--format json` output: new/existing/fixed findings, "
                           "measured regressions")
    gate.add_argument("--block-on-new-only", action="store_true", default=None,
                      help="with --baseline, only new findings block (config: block-on-new-only)")
    gate.add_argument("--min-score", type=_min_score, metavar="N",
                      help="block below this score (config: min-score; default 70)")
    gate.add_argument("--dynamic", action="store_true", help="also run the dynamic harness and report its figures")
    gate.add_argument("--exit-zero", action="store_true", help="exit 0 even when the merge is blocked")
    gate.add_argument("--add-noqa", action="store_true",
                      help="add `# verify-perf: ignore[CODE]` to every line with a finding (adopting the gate on "
                           "an existing code base), print how many, write no report and exit 0")
    fixes = parser.add_argument_group("fixes")
    fixes.add_argument("--fix", action="store_true",
                       help="apply the safe fixes findings offer, rewriting each file in place (with `-`, print the "
                            "fixed source on standard output and the findings on standard error); the exit code and "
                            "outputs then reflect the findings that remain")
    fixes.add_argument("--unsafe-fixes", action="store_true",
                       help="also count fixes that may change behaviour: marked [*], and applied by --fix")
    fixes.add_argument("--show-fixes", action="store_true",
                       help="list the findings --fix fixed (without --fix: would fix), per file and rule")
    speed = parser.add_argument_group("speed")
    speed.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                       help="analyse in N processes (default: $VERIFY_PERF_JOBS, else the available cores)")
    speed.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    speed.add_argument("--cache-dir", type=_named, metavar="DIR",
                       help=f"results cache folder (default: $VERIFY_PERF_CACHE_DIR, else {DEFAULT_CACHE_DIR})")
    speed.add_argument("--no-prefilter", action="store_true",
                       help="parse every file, even those that mention none of the tokens any rule needs")
    speed.add_argument("--file-timeout", type=_seconds, metavar="SECONDS", default=60.0,
                       help="per-file analysis limit, 0.1 to 86400; a file over it is reported as VP900 (default: 60)")
    speed.add_argument("--run-timeout", type=_seconds, metavar="SECONDS", default=600.0,
                       help="limit for the whole analysis, 0.1 to 86400; every file not analysed by then is "
                            "reported as VP900, which blocks (default: 600)")
    speed.add_argument("--max-file-size", type=_size, metavar="SIZE",
                       help="larger files are not read and are reported as VP900, e.g. 20MiB "
                            "(config: max-file-size; default: 10MiB)")
    parser.add_argument("--version", action="version", version=f"verify-perf {__version__}")
    if harness_arguments:
        _add_harness_arguments(parser)
    return parser


def _add_harness_arguments(parser: argparse.ArgumentParser) -> None:
    try:
        add_harness_arguments = importlib.import_module("verifier.dynamic.command").add_harness_arguments
    except (ImportError, AttributeError):
        return  # the run then reports the harness as unavailable
    add_harness_arguments(parser.add_argument_group("dynamic harness (with --dynamic)"))


def build_rule_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="verify-perf rule", description="Explain rules by code, prefix or name.")
    parser.add_argument("rule", nargs="?", help="rule code (VP201), prefix (VP2, ALL) or name (sync-in-hot-loop)")
    parser.add_argument("--all", action="store_true", help="explain every rule")
    parser.add_argument("--format", "--output-format", dest="format", choices=("text", "json"), default="text")
    return parser


def build_clean_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verify-perf clean",
        description="Remove the results caches: every .verify_perf_cache folder in the working directory "
                    "and below, or the one --cache-dir (or $VERIFY_PERF_CACHE_DIR) names. Only folders "
                    "verify-perf marked as its cache are removed.",
    )
    parser.add_argument("--cache-dir", type=_named, metavar="DIR", help="remove this cache folder only")
    return parser


def build_server_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verify-perf server",
        description="Serve the findings to an editor over the Language Server Protocol (stdio): "
                    "diagnostics for each open Python file, fixes as code actions.",
    )
    parser.add_argument("--heat-scope", choices=("paths", "project"), default="paths",
                        help="paths (default): each open file is analysed alone, in well under a second; "
                             "project: heat from every file of its project, as the gate computes it")
    return parser


def document_arguments(path: str, heat_scope: str) -> argparse.Namespace:
    """The check command line the language server analyses an open document with: reported
    alone, quietly, no report written, excluded files left out as the pre-commit hook leaves them."""
    return build_check_parser().parse_args(
        [path, "--no-report", "--quiet", "--force-exclude", "--heat-scope", heat_scope]
    )


def build_bench_parser() -> argparse.ArgumentParser:
    """`verify-perf bench`: the harness's own options (loading them imports torch)."""
    require_extra(DYNAMIC, "`verify-perf bench`")
    try:
        add_bench_arguments = importlib.import_module("verifier.dynamic.command").add_bench_arguments
    except (ImportError, AttributeError) as error:
        raise UsageError(f"`verify-perf bench` is unavailable: the dynamic harness could not be loaded ({error})") from None
    parser = _Parser(prog="verify-perf bench", description="Run the dynamic harness and print its measurements.")
    add_bench_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()  # `bench --time-budget` counts from here: imports included
    args = list(sys.argv[1:] if argv is None else argv)
    hold_standard_descriptors()
    try:
        _working_directory()
        code = _run(args, started)
        # Buffered output that cannot be written fails here with a message, not at exit.
        write_stdout_safely(lambda: None)
        return code
    except UsageError as error:
        print(f"verify-perf: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("verify-perf: interrupted", file=sys.stderr)
        _forget_interrupt()
        return EXIT_ERROR
    except SystemExit as stop:  # argparse's --help, --version and usage errors
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    except BrokenPipeError:  # the reader of `verify-perf rule --all | head` has gone: done
        discard_stdout()
        return EXIT_PASS
    except Exception as error:  # a bug in verify-perf: one line and exit 2, the traceback on request
        if os.environ.get("VERIFY_PERF_DEBUG"):
            raise
        print(
            f"verify-perf: internal error: {type(error).__name__}: {error} "
            "(set VERIFY_PERF_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR


def _forget_interrupt() -> None:
    """The interrupt is handled: exit 2, as documented. CPython marks a KeyboardInterrupt raised
    inside code run by `exec` of a string (dataclasses and namedtuples build their methods so,
    while a module is imported) as unhandled and, ending `python -m verifier`, kills the process
    with SIGINT whatever `main` returned; evaluating a string clears that mark."""
    exec("")  # noqa: S102 - an empty string, for the side effect above


def _working_directory() -> None:
    """Paths are relative to it: a folder deleted under the shell is a usage error up front."""
    try:
        os.getcwd()
    except OSError as error:
        raise UsageError(
            f"the working directory is gone ({error.strerror or error}): it was deleted or moved; "
            "change to an existing folder and run again"
        ) from None


def _run(args: list[str], started: float) -> int:
    if args and args[0] == "rule":
        from verifier.explain import run_rule_command

        return run_rule_command(build_rule_parser().parse_args(args[1:]))
    if args and args[0] == "clean":
        from verifier.clean import run_clean

        parsed = build_clean_parser().parse_args(args[1:])
        return run_clean(parsed.cache_dir or os.environ.get("VERIFY_PERF_CACHE_DIR") or None)
    if args and args[0] == "server":
        parsed = build_server_parser().parse_args(args[1:])
        require_extra(SERVER, "`verify-perf server`")
        return importlib.import_module("verifier.server.language_server").serve(
            lambda path: document_arguments(path, parsed.heat_scope)
        )
    if args and args[0] == "bench":
        parsed = build_bench_parser().parse_args(args[1:])
        parsed.budget_started_at = started
        return importlib.import_module("verifier.dynamic.command").run_bench(parsed)
    from verifier.check import run_check

    prog = "verify-perf"
    if args and args[0] == CHECK_COMMAND:
        args, prog = args[1:], f"verify-perf {CHECK_COMMAND}"
    parsed = build_check_parser(harness_arguments="--dynamic" in args, prog=prog).parse_args(args)
    defaulted = not parsed.paths
    parsed.paths = _paths(parsed.paths, parsed.stdin_filename)
    if prog != "verify-perf" and defaulted and parsed.stdin_filename is None and os.path.lexists(CHECK_COMMAND):
        print(f"verify-perf: note: `{CHECK_COMMAND}` is the subcommand (as in `ruff check`), so `.` is analysed; "
              f"to analyse only ./{CHECK_COMMAND}, name it `./{CHECK_COMMAND}`", file=sys.stderr)
    if parsed.dynamic:
        require_extra(DYNAMIC, "--dynamic")
    return run_check(parsed)


def _paths(paths: list[str], stdin_filename: str | None) -> list[str]:
    """No PATH is the working directory, as in ruff; with --stdin-filename it is standard input."""
    if not paths:
        return [STDIN] if stdin_filename is not None else ["."]
    if STDIN in paths and len(paths) > 1:
        raise UsageError("`-` (standard input) cannot be combined with other paths")
    if stdin_filename is not None and paths != [STDIN]:
        raise UsageError("--stdin-filename names the source read from standard input: give `-` (or no PATH) with it")
    return paths
