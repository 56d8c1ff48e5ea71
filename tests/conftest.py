"""Shared helpers: run the engine on a snippet or a file the way the CLI does."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture
def analyse(tmp_path):
    """Analyse a dedented snippet written to a file; returns [(code, line, severity name)].

    INFO findings (e.g. VP306 "no autocast") are left out unless `select` asks for rules.
    """

    def run(code: str, name: str = "train.py", **settings) -> list[tuple[str, int, str]]:
        path = tmp_path / name
        path.write_text(textwrap.dedent(code), encoding="utf-8")
        result = analyze_paths([str(path)], Settings(**settings))
        keep_info = "select" in settings
        return [(f.code, f.line, f.severity.name) for f in result.findings if keep_info or f.severity.name != "INFO"]

    return run


@pytest.fixture(autouse=True, scope="session")
def private_cache_key(tmp_path_factory):
    """Cache entries are signed with a key of the test session's own, never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERIFY_PERF_CACHE_KEY_FILE", str(tmp_path_factory.mktemp("cache-key") / "key"))
        yield


@pytest.fixture(autouse=True, scope="session")
def plain_output():
    """Styling is each test's own choice: NO_COLOR or FORCE_COLOR from the shell or the CI
    service (FORCE_COLOR styles piped text) never reach a run the suite reads."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("NO_COLOR", raising=False)
        patch.delenv("FORCE_COLOR", raising=False)
        yield
