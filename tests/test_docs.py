"""The documentation: a README a newcomer reads in two minutes, links that lead somewhere, commands and
output that are the real ones, and install commands that name the release tag of this version
(releases are tagged `v<version>`), so a user copying them gets the code the docs describe."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from verifier import __version__
from verifier.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, ROOT / "CHANGELOG.md", *DOCS]
SETUP_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e . && .venv/bin/verify-perf examples/ --exit-zero",
    "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[test]' && .venv/bin/pytest",
)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def outside_code(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code spans removed."""
    lines, fence = [], None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
            fence = None
        elif fence is None:
            lines.append(re.sub(r"(`+).*?\1", "", line))
    return lines


def code_blocks(text: str, after_heading: str) -> list[list[str]]:
    """The fenced blocks under a heading, up to the next heading of any level."""
    section = text.split(after_heading, 1)[1]
    section = re.split(r"\n#{1,6} ", section, maxsplit=1)[0]
    return [block.split("\n")[1:-1] for block in re.findall(r"```[a-z]*\n.*?\n```", section, re.DOTALL)]


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces made hyphens, repeats numbered."""
    seen: Counter[str] = Counter()
    found = set()
    for line in outside_code(text_of(path)):
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return found


def test_every_documented_tag_is_this_version():
    for path in PAGES:
        text = text_of(path)
        tags = {a or b for a, b in re.findall(r"@v(\d+\.\d+\.\d+)|rev: v(\d+\.\d+\.\d+)", text)}
        assert tags <= {__version__}, path.name
    assert re.search(r"rev: v(\d+\.\d+\.\d+)", text_of(README)).group(1) == __version__


def test_the_readme_is_a_two_minute_read():
    assert len(text_of(README).splitlines()) <= 200


def test_the_readme_keeps_the_two_set_up_commands_exactly():
    setup = code_blocks(text_of(README), "## Set-up\n")
    assert [block for block in setup if len(block) == 1] == [[SETUP_COMMANDS[0]], [SETUP_COMMANDS[1]]]
    assert SETUP_COMMANDS[1] in text_of(ROOT / ".ci" / "run")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading(path):
    broken = []
    for line in outside_code(text_of(path)):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, fragment = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            if not destination.exists():
                broken.append(target)
            elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
                broken.append(target)
    assert broken == []


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / target.partition("#")[0]).resolve()
              for line in outside_code(text_of(README)) for target in LINK.findall(line)}
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


def test_example_output_in_the_docs_is_what_verify_perf_prints(capsys, monkeypatch):
    """The README's example and the text-output example are lines `verify-perf examples/` prints
    (a line ending in `...` is the start of one)."""
    monkeypatch.chdir(ROOT)
    assert main(["examples/", "--no-report", "--no-cache"]) == 1
    printed = capsys.readouterr().out.splitlines()
    examples = [
        *code_blocks(text_of(README), "## What it prints\n"),
        *code_blocks(text_of(ROOT / "docs" / "usage.md"), "## Text output and exit codes\n"),
    ]
    assert examples and all(examples)
    for block in examples:
        for line in block:
            if line.endswith("..."):
                assert any(p.startswith(line[:-3]) for p in printed), line
            else:
                assert line in printed, line


def test_the_changelog_has_this_version():
    changelog = text_of(ROOT / "CHANGELOG.md")
    assert re.search(rf"^## \[{re.escape(__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.MULTILINE)
    section = changelog.split(f"## [{__version__}]", 1)[1].split("\n## [", 1)[0]
    assert [h for h in re.findall(r"^### (.*)$", section, re.MULTILINE)] == ["Added", "Changed", "Fixed"]
