"""Whether text output is styled, decided once from where it goes and the environment.

no-color.org: `NO_COLOR` set to anything but "" means no ANSI styling at all (no colour, and no
bold or dim either, which rich would keep). force-color.org: `FORCE_COLOR` set to anything but
"" means styled output even when standard output is not a terminal (a CI log that shows colour).
NO_COLOR wins over FORCE_COLOR. The terminal's layout (a code frame under each finding) comes
with a terminal or with FORCE_COLOR; piped output otherwise stays the plain lines tools parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Styling:
    terminal: bool  # the terminal's layout: code frames under the findings
    colour: bool  # ANSI styles: colour, bold, dim


def styling(is_terminal: bool, environ: Mapping[str, str]) -> Styling:
    no_colour = bool(environ.get("NO_COLOR"))
    forced = bool(environ.get("FORCE_COLOR")) and not no_colour
    return Styling(terminal=is_terminal or forced, colour=(is_terminal or forced) and not no_colour)
