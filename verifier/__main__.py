"""`python -m verifier` runs the same command line as `verify-perf`, just as safely.

`python -m` puts the working directory first on `sys.path`, so a `json.py`, `argparse.py` or
`libcst.py` in the project being analysed would be imported instead of the real module and run.
That entry is dropped before anything else is imported (what Python 3.11's `-P` does); the
console script never has it. `os` and `sys` are already loaded by the interpreter itself.
"""

import os
import sys


def _is_working_directory(entry: str) -> bool:
    try:
        return os.path.realpath(entry or os.curdir) == os.path.realpath(os.curdir)
    except OSError:  # the working directory was deleted: `main` says so; nothing is imported from it
        return entry in ("", os.curdir)


if not sys.flags.safe_path and sys.path and _is_working_directory(sys.path[0]):
    del sys.path[0]

from verifier.startup import end_startup, guard_startup  # noqa: E402 - only once the working directory is off the path

guard_startup()

from verifier.cli import main  # noqa: E402 - only once Ctrl-C while importing ends the run quietly

end_startup()
sys.exit(main())
