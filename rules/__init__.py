"""The rule catalogue: one module per rule, named after its code (`vp201_sync_in_hot_loop.py`).

Installed as `verifier.rules`. Adding a rule file is enough for the engine, the CLI's
`verify-perf rule CODE` and the parametrised example tests to find it.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from verifier.static.rule import Rule


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code."""
    found: list[type[Rule]] = []
    for module_info in pkgutil.iter_modules(__path__):
        if not module_info.name.startswith("vp"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule
            and value.__module__ == module.__name__
        )
    return tuple(sorted(found, key=lambda rule: rule.code))


def rule_by_selector(selector: str) -> list[type[Rule]]:
    """Rules matching a code (`VP201`), a prefix (`VP2`, `ALL`) or a name (`repeated-item`)."""
    text = selector.strip()
    if not text:
        return []  # an empty prefix would match every rule
    if text.upper() == "ALL":
        return list(all_rules())
    return [
        rule for rule in all_rules()
        if rule.code.startswith(text.upper()) or rule.name == text.lower()
    ]
