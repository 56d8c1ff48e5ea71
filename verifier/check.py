"""One `verify-perf PATH...` run, in the order the data flows: settings, analysis, fixes (`--fix`),
measurements, baseline, report, outputs, exit code."""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from verifier.config import FileConfig, Settings, find_config, load_config
from verifier.dynamic.results import DynamicResult
from verifier.errors import EXIT_BLOCK, EXIT_ERROR, EXIT_PASS, UsageError
from verifier.findings import Finding
from verifier.fixes.policy import offered
from verifier.integers import parse_whole, shown
from verifier.report.model import NOT_REQUESTED, Fixes, RunInfo, build_report
from verifier.report.render import STATISTICS_FORMATS, render
from verifier.report.styling import Styling, styling
from verifier.report.text import counted
from verifier.scope import find_scope, project_root, relative_to_cwd
from verifier.show import show_files, show_settings
from verifier.stdin import STDIN, reading_stdin, stdin_name
from verifier.stdout import require_stdout, write_stdout_safely
from verifier.static.cache import DEFAULT_CACHE_DIR
from verifier.static.patterns import as_patterns
from verifier.static.parallel import MAX_JOBS, default_jobs
from verifier.task import DEFAULT_REPORT_DIR, default_task, validate_task
from verifier.writing import STDOUT, OutputTarget, output_target

HARNESS_UNAVAILABLE = "not run: harness unavailable"
# Documents that are UTF-8 by definition, whatever the terminal's encoding.
UTF8_FORMATS = ("json", "sarif", "gitlab", "junit")
CALIBRATION_ONLY = (
    "verify-perf: --dynamic without --entry measured only the bundled reference model (a calibration of this "
    "machine and toolchain), none of your code; to measure your own training step, add --entry "
    "package.module:function (the contract: verifier/dynamic/entry.py, docs/dynamic-harness.md)"
)


def run_check(args: argparse.Namespace) -> int:
    from_stdin = stdin_name(args)
    if from_stdin is not None:
        # From here on the run reads that name as its one path; nothing is written unless asked for.
        args.paths, args.no_cache = [from_stdin], True
        args.no_report = args.no_report or args.report_dir is None
    task = validate_task(args.task) if args.task is not None else default_task(args.paths[0])
    date = report_date(args.date, os.environ.get("SOURCE_DATE_EPOCH"))
    settings = effective_settings(args)
    settings.selected_rules()  # an unknown selector is a usage error before any work
    if from_stdin is None:
        return _check(args, settings, task, date)
    with reading_stdin(from_stdin, settings.max_file_size):
        return _check(args, settings, task, date)


def _check(args: argparse.Namespace, settings: Settings, task: str, date: str) -> int:
    if args.statistics and args.format not in STATISTICS_FORMATS:
        raise UsageError(f"--statistics prints text or json, not --format {args.format}")
    if args.fix and args.add_noqa:
        raise UsageError("--fix and --add-noqa exclude each other: fix first, then suppress what remains")
    if _fixes_standard_input(args) and args.output == STDOUT:
        raise UsageError(
            "--fix on standard input prints the fixed source on standard output: send the findings elsewhere "
            "with -o FILE, or leave -o out (they then go to standard error)"
        )
    if args.show_settings:
        require_stdout("the settings", "redirect it to a file")
        write_stdout_safely(lambda: show_settings(settings, root=_root(args, settings), heat_scope=args.heat_scope))
        return EXIT_PASS
    if args.show_files:
        require_stdout("the file list", "redirect it to a file")
        files = _reported_files(args, settings)
        write_stdout_safely(lambda: show_files(files))
        return EXIT_PASS
    if not args.add_noqa:
        # A refused output is an error before any work, not after it.
        _, output_file = _output_targets(args, task)
        if output_file.kind == "stdout":
            require_stdout(f"the {args.format} output")
        if _fixes_standard_input(args):
            require_stdout("the fixed source")
    # So is a baseline that is not one: read and checked before the analysis writes anything.
    stored = _load_baseline(args)

    analysed = analyse(args, settings)
    if args.add_noqa:
        from verifier.add_noqa import add_suppressions, print_summary

        print_summary(add_suppressions(analysed.findings, with_reason=settings.require_suppression_reason))
        return EXIT_ERROR if analysed.errors else EXIT_PASS
    fixing = None
    if args.fix:
        from verifier.fixing import fix_and_write

        fixing = fix_and_write(
            analysed, lambda: analyse(args, settings), unsafe=args.unsafe_fixes, max_size=settings.max_file_size,
            write=not _fixes_standard_input(args),
        )
        analysed = fixing.analysed
    files, findings, internal_errors = analysed.files, analysed.findings, analysed.errors
    dynamic, dynamic_note, harness_failed = (
        _dynamic(args, settings, task) if args.dynamic else (None, NOT_REQUESTED, False)
    )
    analysed = _with_runtime_evidence(analysed, dynamic)
    comparison = _baseline(stored, settings, analysed, dynamic)
    report_path = _report_path(args, task)
    run = RunInfo(
        task=task,
        date=date,
        paths=tuple(args.paths),
        command=reproduce_command(args, task, date),
        diff_base=args.diff,
        config_path=relative_to_cwd(settings.config_path) if settings.config_path else None,
        report_path=report_path,
        sarif_category=args.sarif_category,
    )
    fixes = Fixes(
        unsafe=args.unsafe_fixes, applied=args.fix, fixed=fixing.fixed if fixing else (), show=args.show_fixes
    )
    report = build_report(
        run, files, findings, settings, dynamic=dynamic, dynamic_note=dynamic_note, baseline=comparison,
        heat_files=analysed.heat_files, suppressed=analysed.suppressed, fixes=fixes,
    )

    if not files:
        # Like ruff: said on stderr, exit code from the findings (none: 0); the report says so too.
        print("verify-perf: warning: no Python files found under the given path(s): nothing was analysed", file=sys.stderr)
        if analysed.ignored:
            print(
                f"verify-perf: note: {counted(len(analysed.ignored), 'Python file')} left out by .gitignore or .ignore; "
                "--no-respect-gitignore analyses them",
                file=sys.stderr,
            )

    shown_as = _styling(args)
    if shown_as is not None and shown_as.terminal:
        from verifier.report.terminal import render_terminal

        output = render_terminal(report, quiet=args.quiet, colour=shown_as.colour)
    else:
        output = render(report, args.format, quiet=args.quiet, statistics=args.statistics)
    # Checked again now that the work is done: nothing is written unless every target may be.
    report_target, output_file = _output_targets(args, task)
    if fixing is not None and _fixes_standard_input(args):
        from verifier.fixing import print_fixed_source

        write_stdout_safely(lambda: print_fixed_source(args.paths[0], fixing.fixed_bytes, settings.max_file_size))
    # A reader that has gone (`| head`) ends the output quietly; the exit code is still the run's.
    # The output goes first: one that fails only when written (`-o /dev/full`) leaves no report.
    write_stdout_safely(lambda: output_file.write(output, utf8=args.format in UTF8_FORMATS))
    if args.show_fixes and not _lists_fixes_inline(args):
        from verifier.report.text import fix_listing

        for line in fix_listing(report):
            print(line, file=sys.stderr)
    if report_target is not None:
        report_target.write(render(report, "markdown"))
    # A report sent to standard output is already in front of the reader: no note naming "-".
    report_written = report_target is not None or _output_is_report(args)
    if report_written and report_path != "-" and not args.quiet:
        total = report.scorecard.total
        shown = "not scored" if total is None else f"score {total}/100"
        print(f"Report: {report_path} ({report.decision.status}, {shown})", file=sys.stderr)
    for path, error in internal_errors:
        print(f"verify-perf: {path}: {error}", file=sys.stderr)
    if internal_errors or harness_failed or (fixing is not None and fixing.failed):
        return EXIT_ERROR
    if report.decision.blocks and not args.exit_zero:
        return EXIT_BLOCK
    return EXIT_PASS


def effective_settings(args: argparse.Namespace) -> Settings:
    """Config file first, then the command line on top, as ruff does: `--select` replaces the
    configured selection (and its `extend-select`); `--extend-select`, `--ignore` and `--exclude` add.
    Command-line exclude patterns are relative to the working directory."""
    if args.isolated and args.config:
        raise UsageError("--isolated and --config exclude each other")
    if args.config:
        config = load_config(args.config, required=True)
    elif args.isolated:
        config = FileConfig()
    else:
        found = find_config(args.paths[0])
        config = load_config(found, required=False) if found else FileConfig()
    defaults = Settings()
    return Settings(
        select=_selection(args, config, defaults),
        ignore=config.ignore + tuple(args.ignore),
        exclude=config.exclude + as_patterns(args.exclude),
        respect_gitignore=_first_set(args.respect_gitignore, config.respect_gitignore, defaults.respect_gitignore),
        severity=dict(config.severity),
        per_file_ignores=config.per_file_ignores,
        block_on=config.block_on if config.block_on is not None else defaults.block_on,
        min_score=_first_set(args.min_score, config.min_score, defaults.min_score),
        block_on_new_only=bool(_first_set(args.block_on_new_only, config.block_on_new_only, False)),
        thresholds=config.thresholds,
        regression_tolerance=_first_set(config.regression_tolerance, defaults.regression_tolerance),
        config_path=config.path,
        prefilter=not args.no_prefilter,
        jobs=args.jobs or _env_jobs() or default_jobs(),
        cache_dir=None if args.no_cache else (args.cache_dir or os.environ.get("VERIFY_PERF_CACHE_DIR") or DEFAULT_CACHE_DIR),
        file_timeout=args.file_timeout,
        run_timeout=args.run_timeout,
        max_file_size=_first_set(args.max_file_size, config.max_file_size, defaults.max_file_size),
        unanalysable=_first_set(config.unanalysable, defaults.unanalysable),
        include_tests=_first_set(config.include_tests, defaults.include_tests),
        preview=bool(_first_set(args.preview or None, config.preview, defaults.preview)),
        require_suppression_reason=_first_set(config.require_suppression_reason, defaults.require_suppression_reason),
    )


def _selection(args: argparse.Namespace, config: FileConfig, defaults: Settings) -> tuple[str, ...]:
    if args.select:
        chosen = tuple(args.select)
    else:
        chosen = tuple(config.select or defaults.select) + config.extend_select
    return chosen + tuple(args.extend_select or ())


def _env_jobs() -> int | None:
    value = os.environ.get("VERIFY_PERF_JOBS", "")
    if not value:
        return None
    try:
        return parse_whole(value, 1, MAX_JOBS)
    except ValueError as error:
        raise UsageError(f"VERIFY_PERF_JOBS: {error}") from None


def _first_set(*values):
    return next(v for v in values if v is not None)


# 9999-12-31T23:59:59Z: the last second a YYYY-MM-DD date can show.
_LAST_SECOND = 253_402_300_799


def report_date(option: str | None, source_date_epoch: str | None) -> str:
    """`--date`, else SOURCE_DATE_EPOCH (reproducible builds), else today in UTC; always YYYY-MM-DD."""
    if option is not None:
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", option):
                raise ValueError
            return dt.date.fromisoformat(option).isoformat()
        except ValueError:
            raise UsageError(f"--date {option!r}: expected a date as YYYY-MM-DD") from None
    if source_date_epoch:
        try:
            seconds = parse_whole(source_date_epoch, 0, _LAST_SECOND)
            return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc).date().isoformat()
        except (ValueError, OverflowError, OSError):
            raise UsageError(
                f"SOURCE_DATE_EPOCH={shown(source_date_epoch)}: expected whole seconds since 1970"
            ) from None
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def reproduce_command(args: argparse.Namespace, task: str, date: str) -> str:
    """The command that regenerates the same report, with the date pinned."""
    if args.stdin_filename is not None:
        parts = ["verify-perf", STDIN, "--stdin-filename", args.stdin_filename]
    else:
        parts = ["verify-perf", *args.paths]
    if args.config:
        parts += ["--config", args.config]
    if args.isolated:
        parts.append("--isolated")
    for option in ("select", "extend_select", "ignore", "exclude"):
        values = getattr(args, option)
        if values:
            parts += [f"--{option.replace('_', '-')}", ",".join(values)]
    if args.preview:
        parts.append("--preview")
    if args.force_exclude:
        parts.append("--force-exclude")
    if args.respect_gitignore is not None:
        parts.append("--respect-gitignore" if args.respect_gitignore else "--no-respect-gitignore")
    if args.statistics:
        parts.append("--statistics")
    if args.diff:
        parts += ["--diff", args.diff]
    if args.heat_scope != "project":
        parts += ["--heat-scope", args.heat_scope]
    if args.baseline:
        parts += ["--baseline", args.baseline]
    if args.block_on_new_only:
        parts.append("--block-on-new-only")
    if args.min_score is not None:
        parts += ["--min-score", str(args.min_score)]
    if args.dynamic:
        parts.append("--dynamic")
    parts += ["--task", task, "--date", date]
    return shlex.join(parts)


def _root(args: argparse.Namespace, settings: Settings) -> str | None:
    return project_root(args.paths[0], settings.config_path)


def _scope(args: argparse.Namespace, settings: Settings):
    """The files analysed, the files reported, and with --diff the changes since the merge base."""
    root = _root(args, settings)
    scope = find_scope(
        args.paths, settings.exclude, root=root if args.heat_scope == "project" else None,
        force_exclude=args.force_exclude, boundary=root, respect_ignore_files=settings.respect_gitignore,
    )
    changed = None
    if args.diff:
        from verifier.gitdiff import changed_lines

        changed = changed_lines(args.diff, args.paths)
    return scope, scope.reported, changed


def _reported_files(args: argparse.Namespace, settings: Settings) -> list[str]:
    return _scope(args, settings)[1]


def analyse(args: argparse.Namespace, settings: Settings):
    """Analyse the project, report the named paths (with --diff, what the change made new)."""
    from verifier.progress import analysis_progress
    from verifier.static.engine import UNANALYSABLE, run_limit_message
    from verifier.static.runner import analyze_files

    scope, reported, changed = _scope(args, settings)
    wanted = set(reported)
    with analysis_progress(enabled=not args.quiet) as progress:
        result = analyze_files(
            scope.analysed, settings, on_file=progress.advance, on_start=progress.start, reported=wanted,
            unreadable=scope.unreadable,
        )
    shown = [r for r in result.files if r.path in wanted]
    every_line = sorted(f for r in shown for f in r.findings)
    findings = every_line
    suppressed = sorted(f for r in shown for f in r.suppressed)
    if changed is not None:
        from verifier.gitdiff import on_changed_lines

        findings = _new_since_base(args, settings, every_line, changed)
    # A folder that could not be listed may hold changed code, and a file of the project that the
    # run's time limit cut off lends no heat to the reported ones: each is reported in every mode.
    folders = {folder for folder, _ in scope.unreadable}
    if settings.run_timeout:
        cut_off = run_limit_message(settings.run_timeout)
        folders |= {
            r.path for r in result.files
            if r.path not in wanted and any(f.code == UNANALYSABLE and f.message == cut_off for f in r.findings)
        }
    listing = [f for r in result.files if r.path in folders for f in r.findings]
    # The fixes this run may apply stay with their findings; a suppressed finding is never fixed.
    findings = sorted(offered([*findings, *listing], preview=settings.preview))
    suppressed = [replace(f, autofix=None) for f in suppressed]
    unanalysable = {r.path for r in shown if any(f.code == UNANALYSABLE for f in (*r.findings, *r.suppressed))}
    errors = [(r.path, r.internal_error) for r in shown if r.internal_error]
    return Analysed(
        [r.path for r in shown],
        findings,
        on_changed_lines(suppressed, changed) if changed is not None else suppressed,
        errors,
        len(scope.analysed),
        every_line=sorted([*every_line, *listing]),
        every_suppressed=suppressed,
        compared=_rules_that_ran(settings, [r.path for r in shown], folders, unanalysable),
        ignored=scope.ignored,
    )


def _new_since_base(args: argparse.Namespace, settings: Settings, findings: list[Finding], changed) -> list[Finding]:
    """With --diff, the findings the change introduced or made hotter or more severe than at the
    merge base, wherever they are; and every VP900 of a changed file, so that a change the
    analysis cannot read is never judged by what the base had."""
    from verifier.diffbase import base_of
    from verifier.report.baseline import NEW, compare
    from verifier.static.engine import UNANALYSABLE

    root = _root(args, settings) if args.heat_scope == "project" else None
    base = base_of(args.diff, args.paths, settings, root=root, force_exclude=args.force_exclude)
    states = compare(findings, base, None, tolerance=0.0, max_accuracy_drop=0.0).states
    return [
        f for f in findings
        if states[f] == NEW or (f.code == UNANALYSABLE and changed.lines_of(f.path) is not None)
    ]


def _rules_that_ran(settings: Settings, files: list[str], folders: set[str], unanalysable: set[str]):
    """Which rules ran on which reported file: the selection less the file's per-file-ignores;
    on a file that could not be analysed only VP900 ran, and a folder that could not be listed
    was only listed."""
    from verifier.static.engine import UNANALYSABLE

    codes = {path: settings.codes_run_in(path) for path in files}
    for path in unanalysable:
        codes[path] &= {UNANALYSABLE}
    codes.update((folder, {UNANALYSABLE}) for folder in folders)

    def ran(path: str, code: str) -> bool:
        return code in codes.get(path, ())

    return ran


@dataclass(frozen=True)
class Analysed:
    """What the static analysis hands the report: reported files, findings, suppressed findings."""

    files: list[str]
    findings: list[Finding]
    suppressed: list[Finding]
    errors: list[tuple[str, str]]
    heat_files: int
    # For the baseline: every finding of the reported files (all lines, also with --diff), the
    # suppressed ones, and which rules ran on which file.
    every_line: list[Finding] = field(default_factory=list)
    every_suppressed: list[Finding] = field(default_factory=list)
    compared: Callable[[str, str], bool] | None = None
    # Python files under the named paths that .gitignore or .ignore left out.
    ignored: list[str] = field(default_factory=list)


def _dynamic(args: argparse.Namespace, settings: Settings, task: str) -> tuple[DynamicResult | None, str, bool]:
    """Run the harness through its command module, imported only now (it imports torch).

    Returns (result, why it did not run, whether the harness itself crashed)."""
    try:
        command = importlib.import_module("verifier.dynamic.command")
        options_from_args, run_dynamic = command.options_from_args, command.run_dynamic
    except (ImportError, AttributeError) as error:
        return None, f"{HARNESS_UNAVAILABLE} ({error})", False
    option_error = getattr(command, "HarnessUsageError", ())
    report_path = _report_path(args, task)
    chart = os.path.splitext(report_path)[0] + ".png" if report_path else None
    # `output` is the --format file here, not the harness's JSON: the chart goes next to the report.
    harness_args = argparse.Namespace(**{**vars(args), "output": None, "chart": chart})
    try:
        result = run_dynamic(options_from_args(harness_args, settings.thresholds))
    except option_error as error:
        raise UsageError(f"--dynamic: {error}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a harness bug must still leave a report saying what happened
        print(f"verify-perf: dynamic harness crashed: {type(error).__name__}: {error}", file=sys.stderr)
        return None, f"failed: the harness crashed ({type(error).__name__}: {error})", True
    if result is None:
        return None, "failed: the harness returned no result", True
    if result.failure:
        print(f"verify-perf: dynamic harness failed: {result.failure}", file=sys.stderr)
    if not getattr(args, "entry", None):
        print(CALIBRATION_ONLY, file=sys.stderr)
    return result, "", bool(result.failure)


def _with_runtime_evidence(analysed: Analysed, dynamic: DynamicResult | None) -> Analysed:
    """The findings with what the harness saw at their lines, and the runtime-only ones (VP290),
    joined before the baseline compares them: a runtime-only finding is new or existing like any
    other, and a stored one is fixed only by a run that counted syncs."""
    from verifier.report.evidence import (
        RUNTIME_CODE,
        counts_runtime_syncs,
        join_runtime_evidence,
    )

    if not counts_runtime_syncs(dynamic):
        return analysed
    static_ran = analysed.compared

    def ran(path: str, code: str) -> bool:
        return code == RUNTIME_CODE or static_ran is None or static_ran(path, code)

    return replace(
        analysed,
        findings=join_runtime_evidence(analysed.findings, dynamic),
        every_line=join_runtime_evidence(analysed.every_line, dynamic),
        compared=ran,
    )


def _load_baseline(args):
    if not args.baseline:
        if args.block_on_new_only:
            raise UsageError("--block-on-new-only needs --baseline FILE")
        return None
    from verifier.report.baseline import load_baseline

    return load_baseline(args.baseline)


def _baseline(stored, settings: Settings, analysed: Analysed, dynamic):
    if stored is None:
        return None
    from verifier.report.baseline import compare

    return compare(
        analysed.every_line, stored, dynamic,
        tolerance=settings.regression_tolerance,
        max_accuracy_drop=settings.thresholds.max_accuracy_degradation,
        reported=analysed.findings,
        suppressed=analysed.every_suppressed,
        ran=analysed.compared,
        rules=[rule.code for rule in settings.selected_rules()],
    )


def _fixes_standard_input(args: argparse.Namespace) -> bool:
    """`--fix` on `-`: the fixed source goes to standard output, the findings to standard error."""
    return args.fix and args.stdin_filename is not None


def _lists_fixes_inline(args: argparse.Namespace) -> bool:
    """`--show-fixes` lists its findings within text and concise output; other outputs (and quiet
    or statistics text) leave it to standard error."""
    return args.format in ("text", "concise") and not args.quiet and not args.statistics


def _styling(args: argparse.Namespace) -> Styling | None:
    """Code frames (and colour, unless NO_COLOR) for a person at a terminal, or when FORCE_COLOR
    asks; plain text when piped or to a file. None for output that is never styled."""
    to_stdout = args.output in (None, "-") and not _fixes_standard_input(args)
    if args.format != "text" or not to_stdout or args.statistics:
        return None
    return styling(sys.stdout.isatty(), os.environ)


def _output_targets(args: argparse.Namespace, task: str) -> tuple[OutputTarget | None, OutputTarget]:
    """The markdown report's target (None when not written) and the `--format` output's, both
    checked; UsageError when either is refused or `-o` names the report's own file."""
    if args.output is None and _fixes_standard_input(args):
        output_file = OutputTarget("standard error", "stderr")
    else:
        output_file = output_target(STDOUT if args.output is None else args.output, force=args.force)
    report_path = _report_path(args, task)
    if report_path is None or _output_is_report(args):
        return None, output_file
    report_target = output_target(report_path, force=args.force)
    if report_target.same_file(output_file):
        if not args.force:
            raise UsageError(
                f"-o {args.output} is the markdown report's own file: choose another file for the "
                f"{args.format} output, or pass --no-report or --report-dir DIR (--force writes only the -o output there)"
            )
        return None, output_file
    return report_target, output_file


def _output_is_report(args: argparse.Namespace) -> bool:
    return args.format == "markdown" and bool(args.output)


def _report_path(args: argparse.Namespace, task: str) -> str | None:
    if _output_is_report(args):
        return args.output
    if args.no_report:
        return None
    return os.path.join(args.report_dir or DEFAULT_REPORT_DIR, f"{task}.md")
