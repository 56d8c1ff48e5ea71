"""Cached runs equal cold runs on real code, through random edit sequences.

For each chosen repository of the real-code sets: export its pinned `.py` files, run verify-perf
once with a results cache, then apply random edits one at a time (a comment line, a synchronising
call, a deleted line, a renamed name, a comment at the end of a line or of the file, each at a
random line of a random file) and after each run
verify-perf twice, with the cache and without any, comparing the decision, the score and every
finding (traces and evidence included) field by field. Any difference is a stale cache entry: the
report names the edits that led to it.

    python tests/realcode/cache_identity.py --mirrors ../.mirror --edits 6 [--repo karpathy/nanoGPT]

Standard library and git only; the verifier runs as a subprocess (`--verifier-cmd`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from random_edits import IN_PLACE, edit  # noqa: E402
from score_realcode import export_py, find_git_dir, scope_list  # noqa: E402

DEFAULT_REPOS = ("karpathy/nanoGPT", "karpathy/minGPT", "karpathy/llm.c", "pytorch/examples")
# Edits that keep to the repository's own files (no new function or module of this harness's);
# those that move no line let a run reuse the last project pass.
EDITS = ("comment", "sync", "delete", "rename", *IN_PLACE)


def run(command: list[str], root: Path, targets: list[str], cache: Path | None) -> dict:
    caching = ["--cache-dir", str(cache)] if cache is not None else ["--no-cache"]
    done = subprocess.run(
        [*command, *targets, "--format", "json", "--no-report", "--isolated", "-j", "2", "--exit-zero", *caching],
        cwd=root, capture_output=True, text=True, timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"verify-perf exited {done.returncode}: {done.stderr[-2000:]}")
    data = json.loads(done.stdout)
    return {"decision": data["decision"], "score": data["score"]["total"], "findings": data["findings"]}


def check_repository(repo: dict, mirrors: str, command: list[str], edits: int, seed: int) -> dict:
    scopes = scope_list(repo.get("scope", "."))
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        root = work / repo["mirror"]
        export_py(find_git_dir(mirrors, repo["mirror"]), repo["commit"], scopes, str(root))
        targets = ["."] if scopes == ["."] else scopes
        cache = work / "cache"
        run(command, root, targets, cache)
        rng, done, differences = random.Random(seed), [], []
        for n in range(edits):
            done.append(edit(root, rng, n, kinds=EDITS))
            cached, cold = run(command, root, targets, cache), run(command, root, targets, None)
            if cached != cold:
                differences.append({"after": list(done), "cached": len(cached["findings"]), "cold": len(cold["findings"])})
        return {"name": repo["name"], "edits": done, "differences": differences}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", default=os.environ.get("REALCODE_MIRRORS"), required=False)
    parser.add_argument("--verifier-cmd", default=f"{sys.executable} -m verifier")
    parser.add_argument("--repo", action="append", help="owner/name; repeatable (default: four small ones)")
    parser.add_argument("--edits", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-report")
    args = parser.parse_args(argv)
    if not args.mirrors:
        parser.error("--mirrors (or $REALCODE_MIRRORS) is required")
    wanted = set(args.repo or DEFAULT_REPOS)
    repos = [r for r in json.loads((HERE / "verdicts.json").read_text())["repos"] if r["name"] in wanted]
    command = shlex.split(args.verifier_cmd)
    results = []
    for repo in repos:
        if not (Path(args.mirrors) / repo["mirror"]).is_dir():
            print(f"{repo['name']}: no mirror, left out")
            continue
        result = check_repository(repo, args.mirrors, command, args.edits, args.seed)
        results.append(result)
        verdict = "identical" if not result["differences"] else f"{len(result['differences'])} DIFFERENT"
        print(f"{repo['name']}: {len(result['edits'])} edits, cached vs cold after each: {verdict}")
        for difference in result["differences"]:
            print(f"  after {difference['after']}: cached {difference['cached']} findings, cold {difference['cold']}")
    if args.json_report:
        Path(args.json_report).write_text(json.dumps(results, indent=1) + "\n")
    compared = sum(len(r["edits"]) for r in results)
    different = sum(len(r["differences"]) for r in results)
    print(f"== {compared} edited trees compared in {len(results)} repositories: {compared - different} identical")
    return 1 if different or not results else 0


if __name__ == "__main__":
    sys.exit(main())
