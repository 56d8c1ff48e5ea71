"""Jupyter notebooks as Python source: the code cells, one after another, as ruff reads them.

A notebook's code cells become one module (a function defined in one cell and called from a
loop in another gets its heat), and every line keeps its place: a finding at line L of that
module is shown as `notebook.ipynb:cell N:l` (N counts every cell of the notebook, from 1, as
editors number them; l is the line within the cell). IPython syntax that is not Python is
blanked without moving any line: line magics (`%time f()`), shell escapes (`!pip install`,
`files = !ls`), help (`obj?`), and cell magics (`%%bash`) whose body is not Python; the body
of `%%time`, `%%timeit`, `%%capture` and `%%prun` is Python and is analysed.
Reading a notebook is parsing JSON: nothing in it is executed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from verifier.findings import Finding

from verifier.static.source import DEFAULT_MAX_FILE_SIZE, Source, UnreadableSource, read_bytes, split_lines

NOTEBOOK_SUFFIX = ".ipynb"
# Cell magics whose body is Python code that runs as written.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_LINE_MAGIC = re.compile(r"^(\s*)(?:[%!]|[\w.\[\], ]+=\s*[%!])")
_HELP = re.compile(r"^(\s*)(?:\?\??\S|[\w.\[\]()]+\?\??\s*$)")


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based, counting every cell of the notebook
    first_line: int  # the module line its first line becomes
    lines: int


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


def read_notebook(path: str, max_size: int | None = DEFAULT_MAX_FILE_SIZE) -> tuple[Source, tuple[Cell, ...]]:
    return notebook_source(read_bytes(path, max_size))


def notebook_source(data: bytes) -> tuple[Source, tuple[Cell, ...]]:
    """The code cells of a notebook as one Python source, and where each cell's lines went."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise UnreadableSource(f"not a readable notebook (invalid JSON: {error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise UnreadableSource("not a readable notebook (no list of cells; nbformat 4 is expected)")
    if not _is_python(document.get("metadata")):
        return Source(data, "", "utf-8"), ()
    parts: list[str] = []
    cells: list[Cell] = []
    line = 1
    for number, cell in enumerate(document["cells"], start=1):
        if not isinstance(cell, dict):
            # Skipping it would analyse the notebook without a cell that may hold its training loop.
            raise UnreadableSource(f"not a readable notebook (cell {number} is not an object)")
        if cell.get("cell_type") != "code":
            continue
        lines = python_lines(_cell_text(cell, number))
        if not lines:
            continue
        cells.append(Cell(number, line, len(lines)))
        parts.extend(lines)
        line += len(lines)
    text = "".join(part + "\n" for part in parts)
    return Source(data, text, "utf-8"), tuple(cells)


def python_lines(text: str) -> list[str]:
    """The cell's lines with IPython-only syntax blanked (an indented one becomes `pass`)."""
    lines = split_lines(text)
    if lines and lines[-1] == "":
        lines.pop()
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split(maxsplit=1)[0] if lines[0][2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        lines[0] = ""
    return [_blank_if_ipython(line) for line in lines]


def place(cells: tuple[Cell, ...], line: int) -> tuple[int, int] | None:
    """(cell number, first module line of that cell) for a module line, or None outside any cell."""
    for cell in cells:
        if cell.first_line <= line < cell.first_line + cell.lines:
            return cell.number, cell.first_line
    return None


def _blank_if_ipython(line: str) -> str:
    match = _LINE_MAGIC.match(line) or _HELP.match(line)
    if match is None:
        return line
    indent = match.group(1)
    return f"{indent}pass" if indent else ""


def _cell_text(cell: dict, number: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise UnreadableSource(f"not a readable notebook (cell {number}: source is not text)")


def _is_python(metadata) -> bool:
    """A notebook says which language its kernel runs; without a word, it is taken as Python."""
    if not isinstance(metadata, dict):
        return True
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(field), str):
            return table[field].lower() == "python"
    return True


def in_cell(finding: Finding, cells: tuple[Cell, ...]) -> Finding:
    """The finding with its cell (its `line` stays the module line, which keeps findings in order)."""
    where = place(cells, finding.line)
    if where is None:
        return finding
    number, first_line = where
    return replace(finding, cell=number, cell_start=first_line)
