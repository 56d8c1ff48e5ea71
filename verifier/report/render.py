"""Every output format by name, so the CLI picks one with a string."""

from __future__ import annotations

from verifier.report.model import Report


STATISTICS_FORMATS = ("text", "json")


def render(report: Report, output_format: str, *, quiet: bool = False, statistics: bool = False) -> str:
    if statistics:
        return _statistics(report, output_format, quiet)
    if output_format == "text":
        from verifier.report.text import render_text

        return render_text(report, quiet=quiet)
    if output_format == "concise":
        from verifier.report.text import render_concise

        return render_concise(report, quiet=quiet)
    if output_format == "json":
        from verifier.report.json_format import render_json

        return render_json(report)
    if output_format == "markdown":
        from verifier.report.markdown import render_markdown

        return render_markdown(report)
    if output_format == "sarif":
        from verifier.report.sarif import render_sarif

        return render_sarif(report)
    if output_format == "github":
        from verifier.report.github import render_github

        return render_github(report)
    if output_format == "gitlab":
        from verifier.report.gitlab import render_gitlab

        return render_gitlab(report)
    if output_format == "junit":
        from verifier.report.junit import render_junit

        return render_junit(report)
    raise ValueError(f"unknown output format {output_format!r}")


def _statistics(report: Report, output_format: str, quiet: bool) -> str:
    from verifier.report.statistics import render_statistics_json, render_statistics_text
    from verifier.report.text import summary_lines

    if output_format == "json":
        return render_statistics_json(report)
    if output_format == "text":
        return render_statistics_text(report, summary=[] if quiet else summary_lines(report))
    raise ValueError(f"--statistics prints text or json, not {output_format}")
