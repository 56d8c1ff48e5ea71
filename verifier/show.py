"""`--show-settings` and `--show-files`: what a run would use, printed instead of running it."""

from __future__ import annotations

from verifier.config import HEATS_NAMED, Settings
from verifier.static.discovery import DEFAULT_EXCLUDES
from verifier.writing import write_stdout


def settings_text(settings: Settings, *, root: str | None, heat_scope: str) -> str:
    """Every effective setting, one `name = value` line each, with paths made absolute."""
    thresholds = settings.thresholds
    codes = [rule.code for rule in settings.selected_rules()]
    lines = [
        f"config-file = {settings.config_path or '(none)'}",
        f"project-root = {root or '(none: the named paths only)'}",
        f"heat-scope = {heat_scope}",
        f"select = {', '.join(settings.select)}",
        f"ignore = {', '.join(settings.ignore) or '(none)'}",
        f"rules = {', '.join(codes)}",
        f"default-exclude = {', '.join(DEFAULT_EXCLUDES)}",
        f"exclude = {', '.join(str(pattern) for pattern in settings.exclude) or '(none)'}",
        f"respect-gitignore = {str(settings.respect_gitignore).lower()}",
        "per-file-ignores = " + (
            "; ".join(f"{pattern} = {', '.join(listed)}" for pattern, listed in settings.per_file_ignores) or "(none)"
        ),
        "severity = " + (
            ", ".join(f"{code} = {_levels(levels)}" for code, levels in sorted(settings.severity.items())) or "(none)"
        ),
        f"block-on = {', '.join(s.name for s in sorted(settings.block_on, reverse=True)) or '(none)'}",
        f"min-score = {settings.min_score}",
        f"block-on-new-only = {str(settings.block_on_new_only).lower()}",
        f"unanalysable = {settings.unanalysable}",
        f"include-tests = {str(settings.include_tests).lower()}",
        f"preview = {str(settings.preview).lower()}",
        f"require-suppression-reason = {str(settings.require_suppression_reason).lower()}",
        f"max-file-size = {settings.max_file_size}",
        f"file-timeout = {settings.file_timeout:g}" if settings.file_timeout else "file-timeout = (none)",
        f"run-timeout = {settings.run_timeout:g}" if settings.run_timeout else "run-timeout = (none)",
        f"prefilter = {str(settings.prefilter).lower()}",
        "config-defaults = " + (
            ", ".join(f"{name} = {value!r}" for name, value in settings.config_defaults)
            or "(read from the analysed files when the run starts: argparse options, config dataclass fields)"
        ),
        f"jobs = {settings.jobs}",
        f"cache-dir = {settings.cache_dir or '(disabled)'}",
        f"thresholds.speedup = {thresholds.min_speedup:g}",
        f"thresholds.memory-reduction = {thresholds.min_memory_reduction:g}",
        f"thresholds.accuracy-drop = {thresholds.max_accuracy_degradation:g}",
        f"thresholds.regression-tolerance = {settings.regression_tolerance:g}",
    ]
    return "\n".join(lines) + "\n"


def _levels(levels: dict) -> str:
    """`HIGH` when one severity holds at every heat, else `{ step = HIGH, eval = LOW }`."""
    if len(levels) == len(HEATS_NAMED) and len(set(levels.values())) == 1:
        return next(iter(levels.values())).name
    return "{ " + ", ".join(f"{heat.label} = {levels[heat].name}" for heat in HEATS_NAMED if heat in levels) + " }"


def show_settings(settings: Settings, *, root: str | None, heat_scope: str) -> None:
    write_stdout(settings_text(settings, root=root, heat_scope=heat_scope))


def show_files(files: list[str]) -> None:
    write_stdout("".join(f"{path}\n" for path in files))
