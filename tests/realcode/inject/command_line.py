"""What the real-code harnesses' command lines share: where the mirrors are, which verifier runs,
which training loops of the table, how many runs at a time (injection and invariance both)."""

from __future__ import annotations

import argparse
import os

from tests.realcode.inject.targets import TARGETS, VERDICTS, Repository, Target, load_repositories


def add_run_arguments(parser: argparse.ArgumentParser, *, keep_help: str) -> None:
    parser.add_argument("--mirrors", default=os.environ.get("REALCODE_MIRRORS"), metavar="DIR",
                        help="folder of bare git mirrors named owner+name (default: $REALCODE_MIRRORS)")
    parser.add_argument("--verifier-cmd", default="verify-perf", metavar="CMD",
                        help="verifier command line; paths and the JSON flags are appended")
    parser.add_argument("--repo", action="append", metavar="NAME",
                        help="only this repository (owner/name or owner+name); repeatable")
    parser.add_argument("--jobs", type=int, default=2, help="verify-perf runs in parallel (default 2)")
    parser.add_argument("--timeout", type=float, default=900, metavar="S", help="time limit of one verify-perf run")
    parser.add_argument("--keep", metavar="DIR", help=keep_help)
    parser.add_argument("--verdicts", default=VERDICTS, help=argparse.SUPPRESS)


def selected_targets(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[list[Target], dict[str, Repository]]:
    """The training loops `--repo` names (all of the table without it), and every repository's
    mirror and commit; a usage error without mirrors or when `--repo` names no loop."""
    if not args.mirrors:
        parser.error("--mirrors DIR (or $REALCODE_MIRRORS) is required")
    repos = load_repositories(args.verdicts)
    targets = list(TARGETS)
    if args.repo:
        wanted = set(args.repo)
        targets = [t for t in targets if t.repo in wanted or repos[t.repo].mirror in wanted]
        if not targets:
            parser.error("no training loop of the table belongs to --repo")
    return targets, repos
