"""`python -m verifier` runs the same command line as `verify-perf`."""

import sys

from verifier.cli import main

sys.exit(main())
