"""Adding a step timer: `t0 = time.time()` before the loop, `dt = time.time() - t0` in it.

The timer reads the host clock only; it changes no device work, so every finding must stay.
`t0` goes before the outermost loop of the step's function, `dt` right after the probes. The
file's own `time` module is used where it imports one; otherwise `import time` (under a free
name where `time` means something else) is added after the module header.
"""

from __future__ import annotations

import libcst as cst

from tests.realcode.inject.training_file import module_facts
from tests.realcode.invariance.extract import _insert_import
from tests.realcode.invariance.probed import Pair, Probed
from tests.realcode.invariance.splice import Splice


def step_timer(probed: Probed) -> Pair:
    step = probed.step
    splice = Splice(probed.parsed)
    clock = module_facts(probed.text).bound.get("time")
    if clock is None:
        clock = "time" if "time" not in probed.names.all_identifiers() else probed.names.fresh("time")
        line = "import time\n" if clock == "time" else f"import time as {clock}\n"
        _insert_import(probed, splice, cst.parse_statement(line))
    t0 = probed.names.fresh("t0")
    dt = probed.names.fresh("dt", {t0})
    splice.insert_before(step.outer_loop, [cst.parse_statement(f"{t0} = {clock}.time()\n")])
    splice.insert_after(step.probes[-1], [cst.parse_statement(f"{dt} = {clock}.time() - {t0}\n")])
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    return Pair(probed.label, probed.target.repo, "step_timer", probed.files, files, line_map, probed.probe_sites(),
                f"{t0} = {clock}.time() before the loop, {dt} after the probes")
