"""What a rule can ask about the module being analysed, in one place."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.static.facts import NameFacts
from verifier.static.heat import HeatModel
from verifier.static.names import ImportTable
from verifier.static.rule import Candidate


@dataclass(eq=False)
class ModuleContext:
    path: str
    module: cst.Module
    imports: ImportTable
    heat: HeatModel
    facts: NameFacts
    candidates: list[Candidate] = field(default_factory=list)

    def code_for(self, node: cst.CSTNode) -> str:
        """The source text of `node`, normalised (used to compare expressions)."""
        return self.module.code_for_node(node).strip()
