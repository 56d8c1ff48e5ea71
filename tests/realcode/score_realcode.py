#!/usr/bin/env python3
"""Score verify-perf against hand-judged findings on real repositories.

For every repository in the verdicts file: export the *.py files at the pinned commit
(restricted to the repository's scope) into a temporary folder, run the verifier on it,
match its findings to the judged findings, and print precision (overall and per severity),
gate decision, misses found and the findings nobody has judged yet. Repositories belong to a
`set` ("given": the six judged before this project took the measure over; "added": chosen
since; "given-2": five more judged at one build; "first-look": judged at their first look,
see FIRST_LOOK.md); totals are printed per set, never mixed. Standard library only.
"""
import argparse
import collections
import io
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile

VERIFIER_FLAGS = ["--format", "json", "--no-report", "--no-cache", "--isolated", "-j", "1"]
DEFAULT_VERIFIER = "verify-perf"
DEFAULT_MIRRORS = os.environ.get("REALCODE_MIRRORS")
BLOCKING = ("CRITICAL", "HIGH")
SEVERITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
MEDIUM_AND_ABOVE = ("CRITICAL", "HIGH", "MEDIUM")
WINDOW = 2  # line tolerance for matching verdicts and misses


# ------------------------------------------------------------------ export
def find_git_dir(mirrors, mirror):
    """<mirrors>/<owner+name>/repo (bare), its repo/.git (a snapshot with a work tree), <mirrors>/<owner+name>/.git
    or <mirrors>/<owner+name> (bare)."""
    base = os.path.join(mirrors, mirror)
    for cand in (os.path.join(base, "repo"), os.path.join(base, "repo", ".git"), os.path.join(base, ".git"), base):
        if os.path.isfile(os.path.join(cand, "HEAD")) and os.path.isdir(os.path.join(cand, "objects")):
            return cand
    raise SystemExit(f"error: no git repository for {mirror} under {mirrors} "
                     f"(expected {base}/repo, {base}/.git or a bare repository at {base})")


def scope_list(scope):
    items = [scope] if isinstance(scope, str) else list(scope)
    out = []
    for s in items:
        s = s.strip().strip("/")
        if s in ("", "."):
            return ["."]
        out.append(s)
    return out


def in_scope(path, scopes):
    if scopes == ["."]:
        return True
    return any(path == s or path.startswith(s + "/") for s in scopes)


def export_py(git_dir, commit, scopes, dest, notebooks=False):
    """Extract the *.py files (and *.ipynb notebooks, for a repository whose verdicts say
    `"notebooks": true`) of `commit` that lie in `scopes` into `dest`; return their count."""
    ls = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", commit],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if ls.returncode != 0:
        raise RuntimeError(f"git ls-tree {commit} failed: {ls.stderr.decode(errors='replace').strip()}")
    suffixes = (b".py", b".ipynb") if notebooks else (b".py",)
    # "<mode> <type> <object>\t<path>": regular files only; a symbolic link named `x.py` is a
    # link (never extracted, so never analysed), not a source file of its own.
    entries = [entry.split(b"\t", 1) for entry in ls.stdout.split(b"\0") if b"\t" in entry]
    paths = [
        path.decode("utf-8", "surrogateescape") for meta, path in entries
        if path.endswith(suffixes) and meta.split(b" ", 1)[0] in (b"100644", b"100755")
    ]
    paths = [p for p in paths if in_scope(p, scopes)]
    os.makedirs(dest, exist_ok=True)
    n = 0
    for i in range(0, len(paths), 400):
        chunk = paths[i:i + 400]
        ar = subprocess.run(["git", "--literal-pathspecs", "--git-dir", git_dir, "archive", "--format=tar",
                             commit, "--"] + chunk, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        # git may complain about unrelated missing blobs (e.g. data files) yet still write the archive
        if ar.returncode != 0 or not ar.stdout:
            raise RuntimeError(f"git archive failed: {ar.stderr.decode(errors='replace').strip()}")
        with tarfile.open(fileobj=io.BytesIO(ar.stdout), mode="r:") as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            n += len(members)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=members, filter="data")
            else:
                tar.extractall(dest, members=members)
    if n != len(paths):
        raise RuntimeError(f"exported {n} of {len(paths)} .py files")
    return n


# ------------------------------------------------------------------ run
def run_verifier(cmd, root, name, scopes, timeout):
    targets = [name] if scopes == ["."] else [os.path.join(name, s) for s in scopes]
    argv = shlex.split(cmd) + targets + VERIFIER_FLAGS
    p = subprocess.run(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    try:
        return json.loads(p.stdout.decode("utf-8", "replace")), p.returncode
    except json.JSONDecodeError:
        raise RuntimeError(f"verifier exit {p.returncode}, no JSON on stdout; stderr: "
                           f"{p.stderr.decode(errors='replace')[-2000:]}")


def norm_path(path, root, name):
    if os.path.isabs(path):
        path = os.path.relpath(path, root)
    path = path.replace(os.sep, "/")
    while path.startswith("./"):
        path = path[2:]
    if path.startswith(name + "/"):
        path = path[len(name) + 1:]
    return path


# ------------------------------------------------------------------ scoring
def match(findings, verdicts):
    """Pair findings with verdicts on (path, code) and |line difference| <= WINDOW.

    Exact lines are paired first, then 1 apart, then 2 apart; among equal distances a verdict
    with the same column wins. Every verdict and every finding is used at most once.
    Returns {finding index: verdict index}.
    """
    by_key = collections.defaultdict(list)
    for j, v in enumerate(verdicts):
        by_key[(v["path"], v["code"])].append(j)
    pairs, used = {}, set()
    for dist in range(WINDOW + 1):
        for i, f in enumerate(findings):
            if i in pairs:
                continue
            cands = [j for j in by_key.get((f["path"], f["code"]), ())
                     if j not in used and abs(verdicts[j]["line"] - f["line"]) == dist]
            if not cands:
                continue
            same_col = [j for j in cands if verdicts[j].get("column") == f.get("column")]
            j = (same_col or cands)[0]
            pairs[i] = j
            used.add(j)
    return pairs


def miss_hits(miss, findings):
    lo, hi = miss.get("span") or (miss["line"], miss["line"])
    lo, hi = lo - WINDOW, hi + WINDOW
    near = [f for f in findings if f["path"] == miss["path"] and lo <= f["line"] <= hi]
    rules = [miss["rule"]] + list(miss.get("alt_rules", []))
    return near, [f for f in near if f["code"] in rules]


def ratio(a, b):
    return a / b if b else None


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


def severity_line(by_severity):
    """`HIGH 2 (TP 2 DEB 0 FP 0)` for every severity with judged findings."""
    parts = []
    for sev in SEVERITIES:
        c = by_severity.get(sev, {})
        n = sum(c.values())
        if n:
            parts.append(f"{sev} {n} (TP {c.get('TP', 0)} DEB {c.get('DEB', 0)} FP {c.get('FP', 0)}, "
                         f"strict {fmt(ratio(c.get('TP', 0), n))})")
    return "; ".join(parts) or "none judged"


def totals(results):
    """The figures of one set of repositories, summed."""
    S = lambda k: sum(r[k] for r in results)
    by_severity = {sev: {k: sum(r["by_severity"].get(sev, {}).get(k, 0) for r in results)
                         for k in ("TP", "DEB", "FP")} for sev in SEVERITIES}
    high = {k: sum(by_severity[sev][k] for sev in MEDIUM_AND_ABOVE) for k in ("TP", "DEB", "FP")}
    judged_high = sum(high.values())
    tp, deb, fp, judged = S("tp"), S("deb"), S("fp"), S("judged")
    return {
        "repos": len(results), "tp": tp, "deb": deb, "fp": fp, "judged": judged, "above_info": S("above_info"),
        "strict_p": ratio(tp, judged), "lenient_p": ratio(tp + deb, judged),
        "strict_p_medium_up": ratio(high["TP"], judged_high), "judged_medium_up": judged_high,
        "false_blocking": S("false_blocking"), "decisions_ok": sum(1 for r in results if r["decision_ok"]),
        "misses_found": S("misses_found"), "misses_scorable": S("misses_scorable"), "misses_new": S("misses_new"),
        "unjudged": S("unjudged"), "by_severity": by_severity,
    }


def summary_line(label, t):
    return (f"{label}: strict P={fmt(t['strict_p'])} lenient P={fmt(t['lenient_p'])} "
            f"strict P(MEDIUM+)={fmt(t['strict_p_medium_up'])} false-blocking={t['false_blocking']} "
            f"decisions {t['decisions_ok']}/{t['repos']} misses-found {t['misses_found']}/{t['misses_scorable']} "
            f"unjudged={t['unjudged']}")


def score_repo(repo, args, out):
    name = repo["mirror"]
    scopes = scope_list(repo.get("scope", "."))
    res = {"name": repo["name"], "mirror": name, "commit": repo["commit"], "scope": scopes}
    with tempfile.TemporaryDirectory(prefix="realcode-") as root:
        nfiles = export_py(
            find_git_dir(args.mirrors, name), repo["commit"], scopes, os.path.join(root, name), repo.get("notebooks", False)
        )
        data, rc = run_verifier(args.verifier_cmd, root, name, scopes, args.timeout)
        findings = []
        for f in data.get("findings", []):
            g = dict(f)
            g["path"] = norm_path(f["path"], root, name)
            if f.get("cell") is not None:
                # A notebook's lines count within a cell: the cell is part of where the finding is.
                g["path"] = f"{g['path']}#cell{f['cell']}"
            findings.append(g)
    above = [f for f in findings if f.get("severity") != "INFO"]
    verdicts = repo.get("verdicts", [])
    pairs = match(above, verdicts)
    counts = collections.Counter(verdicts[j]["verdict"] for j in pairs.values())
    by_severity = {sev: collections.Counter() for sev in SEVERITIES}
    for i, j in pairs.items():
        by_severity.setdefault(above[i]["severity"], collections.Counter())[verdicts[j]["verdict"]] += 1
    tp, deb, fp = counts["TP"], counts["DEB"], counts["FP"]
    judged = tp + deb + fp
    false_block = [(above[i], verdicts[j]) for i, j in pairs.items()
                   if verdicts[j]["verdict"] == "FP" and above[i]["severity"] in BLOCKING]
    unjudged = [f for i, f in enumerate(above) if i not in pairs]
    gone = [v for j, v in enumerate(verdicts) if j not in set(pairs.values())]
    status = (data.get("decision") or {}).get("status")
    total = (data.get("score") or {}).get("total")
    expected = repo.get("expected_decision")
    misses = repo.get("misses", [])
    scorable = [m for m in misses if not m["rule"].startswith("new:")]
    found = []
    for m in scorable:
        _, hits = miss_hits(m, findings)
        if hits:
            found.append((m, hits))
    res.update(dict(
        files=nfiles, verifier_exit=rc, above_info=len(above), judged=judged, tp=tp, deb=deb, fp=fp,
        unjudged=len(unjudged), strict_p=ratio(tp, judged), lenient_p=ratio(tp + deb, judged),
        false_blocking=len(false_block), decision=status, score=total, expected_decision=expected,
        decision_ok=(status == expected), misses_scorable=len(scorable), misses_found=len(found),
        misses_new=len(misses) - len(scorable),
        gone={k: sum(1 for v in gone if v["verdict"] == k) for k in ("TP", "DEB", "FP")},
        set=repo.get("set", "given"),
        by_severity={sev: {k: c[k] for k in ("TP", "DEB", "FP")} for sev, c in by_severity.items()},
    ))
    p = lambda s="": print(s, file=out)
    p(f"== {repo['name']} @ {repo['commit'][:10]} (scope {' '.join(scopes)}; {nfiles} .py files)")
    p(f"findings above INFO: {len(above)}; judged: {judged} (TP {tp}, DEB {deb}, FP {fp}); unjudged: {len(unjudged)}")
    p(f"strict P = {fmt(res['strict_p'])}  lenient P = {fmt(res['lenient_p'])}  "
      f"FP among HIGH/CRITICAL: {len(false_block)}")
    p("per severity: " + severity_line(res["by_severity"]))
    for f, v in false_block:
        p(f"  false-blocking: {f['path']}:{f['line']} {f['code']} {f['severity']} ({v['cause']})")
    p(f"decision: {status} (score {total}), expected {expected} -> {'agree' if status == expected else 'DISAGREE'}")
    p(f"misses found: {len(found)}/{len(scorable)}  (+{len(misses) - len(scorable)} new: misses, not scorable)")
    for m, hits in found:
        p(f"  found: {m['path']}:{m['line']} {m['rule']} <- " +
          ", ".join(f"{h['code']}@{h['line']}" for h in hits))
    for m in misses:
        if m["rule"].startswith("new:"):
            near, _ = miss_hits(m, findings)
            if near:
                p(f"  new: miss {m['path']}:{m['line']} {m['rule']} has nearby findings (check the message): " +
                  ", ".join(f"{h['code']}@{h['line']} {h.get('message', '')[:60]}" for h in near))
    if gone:
        p(f"judged findings no longer reported: {len(gone)} "
          f"(TP {res['gone']['TP']}, DEB {res['gone']['DEB']}, FP {res['gone']['FP']})")
        for v in gone:
            p(f"  gone: {v['path']}:{v['line']} {v['code']} {v['severity']} {v['verdict']} ({v['cause']})")
    if unjudged:
        p("unjudged findings:")
        for f in unjudged:
            p(f"  {f['path']}:{f['line']} {f['code']} {f['severity']} {f.get('message', '')[:80]}")
    p()
    res["unjudged_findings"] = [{k: f.get(k) for k in ("path", "line", "column", "code", "severity", "heat", "message")}
                                for f in unjudged]
    res["matched"] = [{"finding": {k: above[i].get(k) for k in ("path", "line", "column", "code", "severity", "heat",
                                                                 "evidence", "proven")},
                       "verdict": verdicts[j]["verdict"], "judged_line": verdicts[j]["line"]}
                      for i, j in sorted(pairs.items())]
    res["gone_verdicts"] = gone
    res["misses_found_list"] = [{"miss": m, "by": [{"code": h["code"], "line": h["line"]} for h in hits]}
                                for m, hits in found]
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Score a verifier against hand-judged findings (verdicts) on real repositories: "
                    "precision over judged findings, false blocking findings, gate decisions, known "
                    "misses found, and the list of unjudged findings.")
    ap.add_argument("--verdicts", required=True, metavar="FILE", help="verdicts.json (schema 1)")
    ap.add_argument("--verifier-cmd", default=DEFAULT_VERIFIER, required=DEFAULT_VERIFIER is None, metavar="CMD",
                    help="verifier command line; the paths and '%s' are appended%s" % (
                        " ".join(VERIFIER_FLAGS), f" (default: {DEFAULT_VERIFIER})" if DEFAULT_VERIFIER else ""))
    ap.add_argument("--mirrors", default=DEFAULT_MIRRORS, metavar="DIR",
                    help="folder holding one git repository per entry, named owner+name "
                         "(bare at owner+name/repo or owner+name, or a clone at owner+name/.git); "
                         "default: $REALCODE_MIRRORS")
    ap.add_argument("--json-report", metavar="OUT", help="also write the full results as JSON to OUT")
    ap.add_argument("--repo", action="append", metavar="NAME",
                    help="only score this repository (owner/name or owner+name); repeatable")
    ap.add_argument("--timeout", type=float, default=1800, metavar="S", help="verifier time limit per repository")
    args = ap.parse_args(argv)
    if not args.mirrors:
        ap.error("--mirrors DIR (or $REALCODE_MIRRORS) is required")

    doc = json.load(open(args.verdicts))
    if doc.get("schema") != 1:
        raise SystemExit("error: unsupported verdicts schema")
    repos = doc["repos"]
    if args.repo:
        want = set(args.repo)
        repos = [r for r in repos if r["name"] in want or r["mirror"] in want]
        if not repos:
            raise SystemExit("error: no repository matches --repo")
    results, errors = [], []
    for repo in repos:
        try:
            results.append(score_repo(repo, args, sys.stdout))
        except Exception as e:  # keep going; report at the end
            print(f"== {repo['name']}: ERROR {e}\n")
            errors.append({"name": repo["name"], "error": str(e)})
        sys.stdout.flush()

    sets = {}
    for r in results:
        sets.setdefault(r["set"], []).append(r)
    summaries, set_totals = [], {}
    for name in sorted(sets, key=lambda n: (n != "given", n)):
        group = sets[name]
        t = set_totals[name] = totals(group)
        label = "realcode" if name == "given" else f"realcode[{name}]"
        print(f"== total ({name}): {len(group)} repositories")
        print(f"findings above INFO: {t['above_info']}; judged: {t['judged']} (TP {t['tp']}, DEB {t['deb']}, "
              f"FP {t['fp']}); unjudged: {t['unjudged']}")
        print("per severity: " + severity_line(t["by_severity"]))
        print("per-repository strict P: " + ", ".join(f"{r['name']} {fmt(r['strict_p'])}" for r in group))
        print(f"new: misses (not scorable): {t['misses_new']}")
        summaries.append(summary_line(label, t))
    if errors:
        print(f"== {len(errors)} repositories failed: " + ", ".join(e["name"] for e in errors))
    summary = "\n".join(summaries)
    if args.json_report:
        with open(args.json_report, "w") as f:
            json.dump({"repos": results, "errors": errors, "totals": set_totals, "summary": summary},
                      f, indent=1, default=str)
    print(summary)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
