"""Insert lines into a source file and know afterwards where each tagged line landed.

The manifest of an injection (which line holds which probe) is computed from the plan of
edits, not by searching the result for markers, so a test can check the two against each
other. Inserted blocks are anchored to lines of the original file; blocks anchored to the same
line keep the order in which they were added.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Line:
    """One generated line; `probes` and `role` tag the lines the manifest records.

    role "probe": the line holding the probe's costly call; role "call": the line in the
    training loop through which the step reaches it (the same line for an inline probe).
    """

    text: str
    probes: tuple[str, ...] = ()
    role: str | None = None


def indented(lines: list[Line], prefix: str) -> list[Line]:
    """The lines with `prefix` in front of every non-empty one."""
    return [Line(prefix + line.text if line.text else "", line.probes, line.role) for line in lines]


@dataclass
class FileEdit:
    """A plan of insertions (and at most one re-indented range) over one file's text."""

    source: str
    _inserts: list[tuple[int, int, list[Line]]] = field(default_factory=list)
    _reindent: tuple[int, int, str] | None = None

    def insert_after(self, line: int, lines: list[Line]) -> None:
        """Insert after original line `line` (0: before the first line)."""
        self._inserts.append((line, len(self._inserts), lines))

    def insert_before(self, line: int, lines: list[Line]) -> None:
        self.insert_after(line - 1, lines)

    def indent_range(self, first: int, last: int, unit: str) -> None:
        """Indent original lines first..last by one more `unit` (blank lines stay blank)."""
        self._reindent = (first, last, unit)

    def render(self) -> tuple[str, dict[tuple[str, str], int]]:
        """The new text, and {(probe, role): line number in the new text}."""
        original = self.source.splitlines()
        by_anchor: dict[int, list[list[Line]]] = {}
        for anchor, _, lines in sorted(self._inserts, key=lambda item: (item[0], item[1])):
            by_anchor.setdefault(anchor, []).append(lines)
        out: list[str] = []
        tags: dict[tuple[str, str], int] = {}

        def emit(anchor: int) -> None:
            for block in by_anchor.get(anchor, ()):
                for line in block:
                    out.append(line.text)
                    for probe in line.probes:
                        tags[(probe, line.role)] = len(out)

        emit(0)
        for number, text in enumerate(original, start=1):
            if self._reindent and self._reindent[0] <= number <= self._reindent[1] and text.strip():
                text = self._reindent[2] + text
            out.append(text)
            emit(number)
        return "\n".join(out) + "\n", tags
