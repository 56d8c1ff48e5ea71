"""What a rule can ask about the module being analysed, in one place.

The context knows nothing of rules or trackers (they depend on it, never the reverse): a rule
keeps its own reports, and a tracker is any class built from a context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst

from verifier.static.cli_defaults import CommandLine, may_hold_constants
from verifier.static.facts import NameFacts
from verifier.static.heat import Condition, HeatModel
from verifier.static.names import ImportTable
from verifier.static.places import PlaceFacts

T = TypeVar("T")


# A `#` to the end of the line; one inside a string is cut too, which only hides a mention. The
# line ends at any of Python's line breaks: with `[^\n]*`, one comment in a file of lone carriage
# returns took every line after it for part of it.
_COMMENT = re.compile(r"#[^\r\n]*")
# Any sign that the module's tensors may live on an accelerator: device names and arguments,
# `.cuda()`, `.to(...)`, accelerator APIs (torch.accelerator, Hugging Face Accelerate, XLA).
# Plain substrings are tested with `in` (a regular expression with alternatives reads the whole
# text at Python's regex speed); the whole-word names only where their letters occur at all.
_ACCELERATOR_TEXT = ("cuda", "device", "accelerat", "torch_xla", ".to(", "fabric")
_ACCELERATOR_WORD = re.compile(r"\bmps\b|\bxla\b|\bxpu\b")


def names_an_accelerator(code: str) -> bool:
    """Whether `code` (comments removed) names a device, an accelerator API or `.to(`."""
    if any(token in code for token in _ACCELERATOR_TEXT):
        return True
    return ("mps" in code or "xla" in code or "xpu" in code) and _ACCELERATOR_WORD.search(code) is not None


@dataclass(eq=False)
class ModuleContext:
    path: str
    text: str
    module: cst.Module
    imports: ImportTable
    heat: HeatModel
    facts: NameFacts
    # Where values live (accelerator or host), fed by the engine like `facts`.
    places: PlaceFacts
    trackers: dict[Callable[[ModuleContext], object], object] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)
    # The branch the walk is in (`conditions.Conditions.current`, set by the engine before the walk).
    condition_probe: Callable[[], Condition | None] = field(default=lambda: None)
    # The project's configuration defaults (`Settings.config_defaults`).
    config_defaults: tuple[tuple[str, object], ...] = ()

    def tracker(self, kind: Callable[[ModuleContext], T]) -> T:
        """The module's one `kind` tracker; created on first ask (after the trackers it asks for)."""
        found = self.trackers.get(kind)
        if found is None:
            found = self.trackers[kind] = kind(self)
        return found  # type: ignore[return-value]

    def release(self) -> None:
        """Forget the tree and everything the rules hung on this context, once the file is done."""
        self.trackers = {}
        self._memo = {}
        self.condition_probe = lambda: None
        self.imports.forget_nodes()

    def command_line(self) -> CommandLine | None:
        """The defaults of the options this module (or, without its own, the project) reads."""
        if "add_argument" not in self.text and not self.config_defaults and not may_hold_constants(self.text):
            return None
        return self.memo(CommandLine, lambda: CommandLine(self.text, self.config_defaults, self.module))

    def memo(self, key: object, compute):
        """Compute a fact once per module for every rule that asks (e.g. AMP facts per `if`)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def mentions(self, *tokens: str) -> bool:
        """A cheap text test: rules about GradScalers have nothing to do in a file without one."""
        return any(self._mentions(token) for token in tokens)

    def mentions_in_code(self, *tokens: str) -> bool:
        """Like `mentions`, ignoring comments: `# TODO: try autocast` is not using autocast."""
        code = self._code()
        return any(token in code for token in tokens)

    @property
    def may_use_accelerator(self) -> bool:
        """False for a CPU-only module: its code never names a device, so its tensors are host
        tensors and reading them waits for nothing."""
        return self.memo("accelerator-evidence", lambda: names_an_accelerator(self._code()))

    def _code(self) -> str:
        return self.memo("code-without-comments", lambda: _COMMENT.sub("", self.text))

    def _mentions(self, token: str) -> bool:
        key = ("mentions", token)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = token in self.text
        return found

    def code_for(self, node: cst.CSTNode) -> str:
        """The source text of `node`, normalised (used to compare expressions)."""
        return self.module.code_for_node(node).strip()

    def code_without_comments(self, node: cst.CSTNode) -> str:
        """`code_for(node)` without its comments: a token named in a comment is not code."""
        return _COMMENT.sub("", self.code_for(node))
