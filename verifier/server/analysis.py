"""Analysing an open document as `verify-perf FILE` would, from the editor's unsaved text.

The command line's own options and settings are used (the command-line layer builds them: nothing
here imports it), so the configuration file found for the document, its rules, suppressions,
excludes (a file the configuration excludes gets nothing) and fix policy are exactly the gate's. The editor's text stands in for the file on disk while the
analysis runs (`stand_in`), in the worker processes too, and nothing is written but the results
cache.
"""

from __future__ import annotations

import argparse
import os

from verifier.findings import Finding
from verifier.static.source import stand_in

def analyse_document(arguments: argparse.Namespace, text: str) -> list[Finding]:
    """The findings the gate reports for the one path of `arguments` (a check command line, built
    by the command-line layer: `verify-perf PATH --no-report ...`) holding `text`, each with the fix
    it may offer."""
    from verifier.check import analyse, effective_settings

    [path] = arguments.paths
    settings = effective_settings(arguments)
    with stand_in(os.path.abspath(path), text.encode("utf-8", "surrogatepass")):
        return analyse(arguments, settings).findings
