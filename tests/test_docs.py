"""The install commands in the docs name the release tag of this version, so a user copying
them gets the code the docs describe (releases are tagged `v<version>`)."""

from __future__ import annotations

import re
from pathlib import Path

from verifier import __version__

ROOT = Path(__file__).resolve().parent.parent


def test_every_documented_tag_is_this_version():
    for name in ("README.md", "docs/github-actions.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        tags = set(re.findall(r"@v(\d+\.\d+\.\d+)|rev: v(\d+\.\d+\.\d+)", text))
        found = {a or b for a, b in tags}
        assert found == {__version__}, name
