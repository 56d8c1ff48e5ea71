#!/usr/bin/env python3
"""Judging sheets for a first look, and merging the judged sheets into verdicts.json.

The first-look protocol (FIRST_LOOK.md): run one build on repositories nobody here has analysed,
judge every finding above INFO by reading the code, list the misses, write the expected decision,
and only then record the figures. `prepare` exports each repository's Python files at its newest
commit, runs the build and writes one sheet per repository (or per part, for a large one) with
every finding, its heat trace and its premises, and an empty verdict to fill in. `merge` checks
that every finding of every sheet has a verdict and a cause and appends the repositories to the
verdicts file as set `first-look`. Standard library only.

    python tests/realcode/first_look.py prepare OUT --mirrors ../.mirror \
        --verifier-cmd "python -m verifier" --build 1829a29 owner/name[:scope,scope] ... [--parts 2]
    python tests/realcode/first_look.py merge OUT --verdicts tests/realcode/verdicts.json
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score_realcode as scorer  # noqa: E402  (the scorer's export and run, shared)

VERDICTS = ("TP", "DEB", "FP")


def head_commit(git_dir):
    out = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def sheet_finding(finding, root, mirror):
    return {
        "path": scorer.norm_path(finding["path"], root, mirror),
        **{key: finding.get(key) for key in ("line", "column", "code", "severity", "heat", "message", "proven")},
        "trace": [f"{scorer.norm_path(step.get('path') or '', root, mirror)}:{step.get('line')} {step.get('what')}"
                  for step in finding.get("heat_trace", [])],
        "evidence": [f"{item.get('premise')} {item.get('status')}: {item.get('text')}" for item in finding.get("evidence", [])],
        "verdict": None,
        "cause": None,
    }


def split_by_file(findings, parts):
    """`parts` lists of findings, whole files kept together, sizes as even as the files allow."""
    by_file = {}
    for finding in findings:
        by_file.setdefault(finding["path"], []).append(finding)
    buckets = [[] for _ in range(parts)]
    for path in sorted(by_file, key=lambda p: -len(by_file[p])):
        min(buckets, key=len).extend(by_file[path])
    return [sorted(b, key=lambda f: (f["path"], f["line"], f["code"])) for b in buckets if b]


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    for spec in args.repos:
        name, _, scope = spec.partition(":")
        mirror = name.replace("/", "+")
        scopes = scorer.scope_list(scope.split(",") if scope else ".")
        git_dir = scorer.find_git_dir(args.mirrors, mirror)
        commit = head_commit(git_dir)
        root = os.path.join(args.out, "src")
        count = scorer.export_py(git_dir, commit, scopes, os.path.join(root, mirror))
        data, _ = scorer.run_verifier(args.verifier_cmd, root, mirror, scopes, args.timeout)
        findings = [sheet_finding(f, root, mirror) for f in data.get("findings", []) if f.get("severity") != "INFO"]
        head = {
            "name": name, "mirror": mirror, "commit": commit, "scope": scopes, "build": args.build,
            "source": os.path.join(root, mirror), "files": count,
            "decision": (data.get("decision") or {}).get("status"), "score": (data.get("score") or {}).get("total"),
            "findings_above_info": len(findings),
            "expected_decision": None, "misses": [], "note": None,
        }
        chunks = split_by_file(findings, max(1, args.parts)) or [[]]
        for index, chunk in enumerate(chunks):
            suffix = "" if len(chunks) == 1 else f".part{index + 1}"
            path = os.path.join(args.out, f"{mirror}{suffix}.json")
            with open(path, "w") as out:
                json.dump({**head, "part": f"{index + 1} of {len(chunks)}", "findings": chunk}, out, indent=1)
            print(f"{path}: {len(chunk)} findings ({name}, {count} files, {head['decision']} {head['score']})")


def _problems(sheet, path):
    for finding in sheet["findings"]:
        if finding.get("verdict") not in VERDICTS or not finding.get("cause"):
            yield f"{path}: {finding['path']}:{finding['line']} {finding['code']} has no verdict and cause"
    for miss in sheet.get("misses", []):
        if not {"path", "line", "rule", "why"} <= set(miss):
            yield f"{path}: a miss lacks path, line, rule or why: {miss}"


def merge(args):
    sheets = {}
    for entry in sorted(os.listdir(args.out)):
        if entry.endswith(".json"):
            with open(os.path.join(args.out, entry)) as f:
                sheet = json.load(f)
            if isinstance(sheet, dict) and "findings" in sheet and "mirror" in sheet:
                sheets.setdefault(sheet["mirror"], []).append((entry, sheet))
    problems = [p for parts in sheets.values() for entry, sheet in parts for p in _problems(sheet, entry)]
    decisions = {m: {s.get("expected_decision") for _, s in parts} - {None} for m, parts in sheets.items()}
    problems += [f"{m}: expected decision missing or parts disagree: {sorted(d)}" for m, d in decisions.items() if len(d) != 1]
    if problems:
        raise SystemExit("not merged:\n" + "\n".join(problems))
    with open(args.verdicts) as f:
        doc = json.load(f)
    known = {repo["mirror"] for repo in doc["repos"]}
    for mirror, parts in sorted(sheets.items()):
        if mirror in known:
            print(f"{mirror}: already in {args.verdicts}, left as it is")
            continue
        head = parts[0][1]
        findings = [f for _, sheet in parts for f in sheet["findings"]]
        notes = [sheet["note"] for _, sheet in parts if sheet.get("note")]
        doc["repos"].append({
            "name": head["name"], "mirror": mirror, "commit": head["commit"], "scope": head["scope"], "set": "first-look",
            "expected_decision": decisions[mirror].pop(),
            "verdicts": [{k: f[k] for k in ("path", "line", "column", "code", "severity", "verdict", "cause")} for f in findings],
            "misses": [m for _, sheet in parts for m in sheet.get("misses", [])],
            "reference_run": {"verifier": f"verify-perf 0.1.0 at {head['build']} (first look)", "decision": head["decision"],
                              "score": head["score"], "findings_above_info": head["findings_above_info"]},
            "sampled": {"note": "No sample: every finding above INFO was judged at the first look; INFO findings were "
                                "not judged. " + " ".join(notes)},
        })
        print(f"{mirror}: {len(findings)} verdicts, {len(doc['repos'][-1]['misses'])} misses added")
    tmp = args.verdicts + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, args.verdicts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="export, run the build, write one judging sheet per repository (or part)")
    p.add_argument("out")
    p.add_argument("repos", nargs="+", metavar="OWNER/NAME[:SCOPE,...]")
    p.add_argument("--mirrors", required=True)
    p.add_argument("--verifier-cmd", required=True)
    p.add_argument("--build", required=True, help="the commit of the build that runs (recorded in each repository)")
    p.add_argument("--parts", type=int, default=1, help="split each repository's findings into this many sheets")
    p.add_argument("--timeout", type=float, default=1800)
    m = sub.add_parser("merge", help="append the judged sheets to the verdicts file as set first-look")
    m.add_argument("out")
    m.add_argument("--verdicts", required=True)
    args = ap.parse_args(argv)
    (prepare if args.command == "prepare" else merge)(args)


if __name__ == "__main__":
    main()
