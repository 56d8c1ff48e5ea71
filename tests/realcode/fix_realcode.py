#!/usr/bin/env python3
"""`--fix` on real code: every offered fix applied to the judged repositories, checked.

For every repository of the verdicts file with a mirror: export its scope at the pinned commit
into a temporary folder, list the findings that offer a fix, run `--fix` (with `--unsafe-fixes
--preview` unless `--safe-only`: every fix any rule can offer, preview ones included), then check
what issue "Fixes, not just findings" asks of it:
- every file still parses and compiles (compiled, never run);
- the fixed findings are gone from a second analysis and nothing else changed: per file and rule,
  the findings after are the findings before less the ones fixed (a fix that would have left its
  finding, or broken its file, is dropped by `--fix` itself and counted as dropped);
- a second `--fix` changes no byte (idempotent).
Standard library only; prints one line per repository and a total, `--json-report` keeps them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_realcode import export_py, find_git_dir, scope_list  # noqa: E402

FLAGS = ["--no-report", "--no-cache", "--isolated", "-j", "1"]


def _run(cmd: list[str], root: str, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout)


def _findings(verifier: list[str], targets: list[str], root: str, extra: list[str], timeout: int) -> list[dict]:
    done = _run([*verifier, *targets, *FLAGS, *extra, "--format", "json"], root, timeout)
    try:
        return json.loads(done.stdout)["findings"]
    except (json.JSONDecodeError, KeyError):
        raise RuntimeError(f"exit {done.returncode}, no JSON; stderr: {done.stderr[-2000:]}") from None


def _snapshot(folder: str) -> dict[str, bytes]:
    files = {}
    for path in sorted(Path(folder).rglob("*.py")):
        files[str(path.relative_to(folder))] = path.read_bytes()
    return files


def _compile_errors(folder: str, before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Files a fix changed that no longer compile (a file that never compiled is not counted)."""
    broken = []
    for name, data in after.items():
        if data == before.get(name):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                compile(data, name, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as error:
                broken.append(f"{name}: {error}")
    return broken


def check_repo(repo: dict, mirrors: str, verifier: list[str], unsafe: bool, timeout: int) -> dict:
    scopes = scope_list(repo.get("scope", "."))
    extra = ["--unsafe-fixes", "--preview"] if unsafe else []
    with tempfile.TemporaryDirectory(prefix="fix-realcode-") as root:
        name = repo["mirror"]
        export_py(find_git_dir(mirrors, name), repo["commit"], scopes, os.path.join(root, name))
        targets = [name] if scopes == ["."] else [os.path.join(name, s) for s in scopes]
        before_files = _snapshot(root)
        before = _findings(verifier, targets, root, ["--preview"] if unsafe else [], timeout)
        fixable = [f for f in before if f.get("autofix") and (unsafe or f["autofix"]["applicability"] == "safe")]
        fixing = _run([*verifier, *targets, *FLAGS, *extra, "--fix", "--show-fixes", "--format", "json", "-q"], root, timeout)
        after_files = _snapshot(root)
        changed = sorted(n for n, d in after_files.items() if d != before_files.get(n))
        after = _findings(verifier, targets, root, ["--preview"] if unsafe else [], timeout)
        count = collections.Counter((f["path"], f["code"]) for f in before)
        left = collections.Counter((f["path"], f["code"]) for f in after)
        still_fixable = [f for f in after if f.get("autofix") and (unsafe or f["autofix"]["applicability"] == "safe")]
        # What --fix removed, per file and rule; anything else that moved is an unexpected change.
        removed = count - left
        appeared = left - count
        fixed_codes = {(f["path"], f["code"]) for f in fixable}
        unexpected = sorted(f"{p}:{c} {'+' if k in appeared else '-'}" for k in (removed | appeared) for p, c in [k]
                            if k not in fixed_codes or k in appeared)
        again = _run([*verifier, *targets, *FLAGS, *extra, "--fix", "--format", "json", "-q"], root, timeout)
        idempotent = _snapshot(root) == after_files
        return {
            "name": repo["name"], "fixable": len(fixable), "fixed": sum(removed[k] for k in fixed_codes),
            "files_changed": len(changed), "not_compiling": _compile_errors(root, before_files, after_files),
            "still_fixable": len(still_fixable), "unexpected": unexpected, "idempotent": idempotent,
            "fix_exit": fixing.returncode, "second_exit": again.returncode,
            "warnings": [line for line in fixing.stderr.splitlines() if "fixes not applied" in line],
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", default=str(Path(__file__).resolve().parent / "verdicts.json"))
    parser.add_argument("--mirrors", default=os.environ.get("REALCODE_MIRRORS") or str(Path(__file__).resolve().parents[3] / ".mirror"))
    parser.add_argument("--verifier-cmd", default=f"{sys.executable} -m verifier")
    parser.add_argument("--repo", action="append", help="only these repositories (repeatable)")
    parser.add_argument("--safe-only", action="store_true", help="the default fixes only (no --unsafe-fixes, no --preview)")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--json-report")
    args = parser.parse_args()
    verifier = shlex.split(args.verifier_cmd)
    repos = json.loads(Path(args.verdicts).read_text())["repos"]
    results = []
    for repo in repos:
        if args.repo and repo["name"] not in args.repo:
            continue
        if not os.path.isdir(os.path.join(args.mirrors, repo["mirror"])):
            print(f"skip {repo['name']}: no mirror")
            continue
        result = check_repo(repo, args.mirrors, verifier, not args.safe_only, args.timeout)
        results.append(result)
        print(f"{result['name']}: {result['fixed']}/{result['fixable']} fixed in {result['files_changed']} files, "
              f"not compiling {len(result['not_compiling'])}, still fixable {result['still_fixable']}, "
              f"unexpected {len(result['unexpected'])}, idempotent {result['idempotent']}"
              + (f", dropped: {len(result['warnings'])}" if result["warnings"] else ""), flush=True)
    total = {key: sum(r[key] for r in results) for key in ("fixable", "fixed", "files_changed", "still_fixable")}
    total["not_compiling"] = sum(len(r["not_compiling"]) for r in results)
    total["unexpected"] = sum(len(r["unexpected"]) for r in results)
    total["not_idempotent"] = sum(not r["idempotent"] for r in results)
    total["dropped"] = sum(len(r["warnings"]) for r in results)
    print(f"total: {total['fixed']}/{total['fixable']} fixed in {total['files_changed']} files over {len(results)} "
          f"repositories; not compiling {total['not_compiling']}, still fixable {total['still_fixable']}, "
          f"unexpected changes {total['unexpected']}, not idempotent {total['not_idempotent']}, files whose fixes were dropped {total['dropped']}")
    if args.json_report:
        Path(args.json_report).write_text(json.dumps({"repos": results, "total": total}, indent=1) + "\n")
    ok = not (total["not_compiling"] or total["unexpected"] or total["not_idempotent"] or total["still_fixable"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
