"""Findings with the fixes their rules offer, from the real engine on a snippet."""

from __future__ import annotations

import pytest

from verifier.config import Settings
from verifier.rules import rule_by_selector
from verifier.static.engine import analyze_source
from verifier.static.source import decode_source


@pytest.fixture
def offered():
    """`offered(text, "VP308", ...)`: the findings of those rules in `text` (as train.py)."""

    def run(text: str, *codes: str):
        rules = [rule for code in codes for rule in rule_by_selector(code)]
        return analyze_source("train.py", decode_source(text.encode()), rules, Settings(preview=True)).findings

    return run
