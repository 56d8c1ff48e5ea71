"""Hostile baselines: files that are not JSON, not UTF-8, huge, deeply nested or not files at
all; verify-perf reports with fields of the wrong type; dynamic sections with every stored figure
replaced by something else; and forged reports (findings removed, added, re-fingerprinted, a
perfect score claimed). A baseline that is not a verify-perf report is refused (exit 2, a message
naming --baseline); one that is, forged or not, never changes what the run finds or decides."""

from __future__ import annotations

import copy
import json
import os
import random

from tests.hostile.case import CACHED, Case
from tests.hostile.sources import TRAIN
from tests.hostile.trees import JSON, combine, files, link
from tests.report.conftest import make_dynamic

CATEGORY = "baselines"
REFUSED = "--baseline"


def _report() -> dict:
    """A verify-perf JSON report of TRAIN as train.py, written the way `--format json` writes it."""
    finding = {
        "path": "train.py", "line": 9, "column": 9, "code": "VP203", "end_line": 9, "end_column": 33,
        "name": "synchronize-in-loop", "severity": "HIGH", "category": "Host-device sync", "heat": "step",
        "message": "`synchronize()` in a loop blocks the host on every iteration",
        "source": "        torch.cuda.synchronize()", "fix": "", "cell": None, "runtime": "", "heat_trace": [],
        "evidence": [], "proven": True, "fingerprint": "0" * 20,
    }
    return {
        "schema_version": 1, "tool": {"name": "verify-perf", "version": "0.1.0"}, "task": "train",
        "files_analysed": 1, "files": ["train.py"], "rules": ["VP203"], "counts": {"HIGH": 1},
        "score": {"total": 87, "proven_total": 87, "maximum": 100, "min_score": 70}, "decision": {"status": "BLOCK"},
        "findings": [finding], "suppressed": 0, "suppressed_findings": [], "dynamic": None, "baseline": None,
    }


def _dynamic() -> dict:
    """A plausible stored harness result (FP32, FP16 with a GradScaler, BF16 failed), as the
    report's `dynamic.result`."""
    return make_dynamic().to_dict()


def _with_baseline(data: str | bytes) -> object:
    return files({"train.py": TRAIN, "base.json": data})


def _refused_case(name: str, build, argv=(".", "--baseline", "base.json"), *, fast: bool = False) -> Case:
    return Case(CATEGORY, name, build, (*argv, *JSON), 2, stderr=REFUSED, fast=fast)


def _forged_case(name: str, document: dict, *, extra: tuple[str, ...] = (), reference_document: dict | None = None,
                 refusal: str = "", fast: bool = False) -> Case:
    """A report-shaped baseline: the run must find and decide exactly what it does without it
    (or with `reference_document`), unless the baseline is refused."""
    build = _with_baseline(json.dumps(document))
    if reference_document is None:
        reference, reference_argv = files({"train.py": TRAIN}), (".", *JSON, *extra)
    else:
        reference = _with_baseline(json.dumps(reference_document))
        reference_argv = (".", "--baseline", "base.json", *JSON, *extra)
    return Case(CATEGORY, name, build, (".", "--baseline", "base.json", *JSON, *extra), 1, outputs=CACHED,
                reference=reference, reference_argv=reference_argv, forged=True, refusal=refusal, fast=fast)


def _not_reports() -> list[Case]:
    texts = {
        "empty": b"", "open-brace": b"{", "array": b"[]", "null": b"null", "number": b"1", "string": b'"x"',
        "findings-null": b'{"findings": null}', "findings-object": b'{"findings": {}}',
        "deep-arrays": b'{"findings": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "deep-objects": b'{"findings": [], "dynamic": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_000 + b"}",
        "huge-integer": b'{"findings": [], "score": {"total": ' + b"9" * 5000 + b"}}",
        "thirty-one-digits": b'{"findings": [], "files_analysed": ' + b"9" * 31 + b"}",
        "bom": b'\xef\xbb\xbf{"findings": []}',
        "utf-16": '{"findings": []}'.encode("utf-16"),
        "latin-1": b'{"findings": [], "task": "caf\xe9"}',
        "null-byte": b'{"findings": []}\x00',
        "trailing-garbage": b'{"findings": []} {}',
        "finding-not-object": b'{"findings": [1]}',
        "line-string": b'{"findings": [{"path": "train.py", "line": "9", "code": "VP203"}]}',
        "line-float": b'{"findings": [{"path": "train.py", "line": 9.0, "code": "VP203"}]}',
        "line-bool": b'{"findings": [{"path": "train.py", "line": true, "code": "VP203"}]}',
        "line-huge": b'{"findings": [{"path": "train.py", "line": 1e400, "code": "VP203"}]}',
        "column-string": b'{"findings": [{"path": "train.py", "line": 9, "column": "9", "code": "VP203"}]}',
        "path-number": b'{"findings": [{"path": 1, "line": 9, "code": "VP203"}]}',
        "path-missing": b'{"findings": [{"line": 9, "code": "VP203"}]}',
        "code-missing": b'{"findings": [{"path": "train.py", "line": 9}]}',
        "source-list": b'{"findings": [{"path": "train.py", "line": 9, "code": "VP203", "source": []}]}',
        "cells-mixed": b'{"findings": [{"path": "a", "line": 1, "code": "VP203", "cell": "x"},'
                       b' {"path": "a", "line": 1, "code": "VP203", "cell": 2}]}',
        "rules-not-list": b'{"findings": [], "rules": "VP203"}',
        "rules-numbers": b'{"findings": [], "rules": [1, 2]}',
        "modes-not-list": b'{"findings": [], "dynamic": {"result": {"modes": 1}}}',
        "modes-of-strings": b'{"findings": [], "dynamic": {"result": {"modes": ["fp32"]}}}',
    }
    cases = [_refused_case(f"not-a-report:{name}", _with_baseline(data), fast=name in ("deep-arrays", "line-huge"))
             for name, data in texts.items()]
    # Report-shaped, with a part the comparison does not read: refused, or no effect at all.
    odd = {
        "nan-score": '{"findings": [], "score": {"total": NaN}}',
        "lone-surrogate-task": '{"findings": [], "task": "\\ud800"}',
        "dynamic-result-list": '{"findings": [], "dynamic": {"result": []}}',
        "infinity-score": '{"findings": [], "score": {"total": Infinity, "proven_total": -Infinity}}',
    }
    cases += [_forged_case(f"odd-report:{name}", json.loads(text)) for name, text in odd.items()]

    def fifo(sandbox) -> None:
        os.mkfifo(sandbox.path("base.json"))

    def folder(sandbox) -> None:
        sandbox.path("base.json").mkdir()

    def sparse(sandbox) -> None:
        with open(sandbox.path("base.json"), "wb") as handle:
            handle.truncate(300 << 20)

    train = files({"train.py": TRAIN})
    special = {
        "fifo": combine(train, fifo), "folder": combine(train, folder), "sparse-300-mib": combine(train, sparse),
        "link-to-zero": combine(train, link("base.json", "/dev/zero")),
        "dangling-link": combine(train, link("base.json", "gone.json")),
        "missing": train,
    }
    cases += [_refused_case(f"file:{name}", build) for name, build in special.items()]
    for name, target in {"dev-null": "/dev/null", "dev-zero": "/dev/zero", "dev-stdin": "/dev/stdin", "empty-name": "",
                         "proc-self": "/proc/self/status"}.items():
        cases.append(_refused_case(f"file:{name}", train, (".", "--baseline", target)))
    cases.append(Case(CATEGORY, "block-on-new-only-without-baseline", train, (".", "--block-on-new-only", *JSON), 2,
                      stderr="--baseline"))
    return cases


def _samples(count: int) -> dict:
    report, dynamic = _report(), _dynamic()
    dynamic["modes"][0]["step_time"]["samples_ms"] = [20.0] * count
    report["dynamic"] = {"status": "run", "result": dynamic}
    return report


def _leaf_paths(value, prefix=()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _leaf_paths(item, (*prefix, key))] or [prefix]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _leaf_paths(item, (*prefix, index))] or [prefix]
    return [prefix]


def _replaced(document, path: tuple, value):
    document = copy.deepcopy(document)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


HOSTILE_VALUES = [None, "x", [], {}, -1, 1e308, float("inf"), float("nan"), 10**29, True, [[[]]], "NaN", -0.0, 0]


def _mutated_dynamic(rng: random.Random) -> list[Case]:
    """Each stored figure of a dynamic section replaced by a hostile value: refused, or harmless."""
    report = _report()
    report["dynamic"] = {"status": "run", "result": _dynamic()}
    leaves = _leaf_paths(report["dynamic"])
    compared = [p for p in leaves if any(k in p for k in ("step_time", "peak_memory_bytes", "accuracy", "fingerprint",
                                                         "user_syncs_per_step", "mode"))]
    chosen = compared[:30] + rng.sample([p for p in leaves if p not in compared], 30)
    cases = []
    for index, path in enumerate(chosen):
        value = HOSTILE_VALUES[index % len(HOSTILE_VALUES)] if index < len(HOSTILE_VALUES) else rng.choice(HOSTILE_VALUES)
        mutated = _replaced(report, ("dynamic", *path), value)
        label = ".".join(map(str, path))
        cases.append(_forged_case(f"dynamic:{label}={value!r}"[:120], mutated, refusal=REFUSED,
                                  fast=label == "result.modes.0.step_time.median_ms"))
    return cases


def _forged() -> list[Case]:
    clean = _report()
    no_findings = {**clean, "findings": []}
    perfect = {**clean, "score": {"total": 100, "proven_total": 100}, "decision": {"status": "PASS"}, "findings": []}
    other_rules = {**clean, "rules": ["VP101"]}
    many = {**clean, "findings": [{**clean["findings"][0], "line": line} for line in range(1, 20_001)]}
    elsewhere = {**clean, "findings": [{**clean["findings"][0], "path": "../../etc/passwd"}]}
    absolute = {**clean, "findings": [{**clean["findings"][0], "path": "/tmp/train.py"}]}
    wrong_source = {**clean, "findings": [{**clean["findings"][0], "source": "torch.cuda.synchronize()  # other"}]}
    cases = [
        _forged_case("forged:no-findings", no_findings, fast=True),
        _forged_case("forged:perfect-score", perfect),
        _forged_case("forged:other-rules", other_rules),
        _forged_case("forged:twenty-thousand-findings", many),
        _forged_case("forged:path-outside", elsewhere),
        _forged_case("forged:absolute-path", absolute),
        _forged_case("forged:same-report", clean),
        _forged_case("forged:thousand-samples", _samples(1000)),
    ]
    # Only new findings block: a stored finding claimed with the right fingerprint but another
    # source line is not this finding, so the run blocks as against an empty baseline.
    new_only = ("--block-on-new-only",)
    forged_fingerprint = {**wrong_source, "findings": [{**wrong_source["findings"][0], "fingerprint": "ab" * 10}]}
    cases.append(_forged_case("forged:fingerprint-field", forged_fingerprint, extra=new_only, reference_document=no_findings))
    cases.append(_forged_case("forged:other-source-line", wrong_source, extra=new_only, reference_document=no_findings))
    cases.append(_forged_case("forged:other-file", elsewhere, extra=new_only, reference_document=no_findings))
    cases.append(_forged_case("forged:low-score-claimed", {**no_findings, "score": {"total": 0, "proven_total": 0}},
                              extra=new_only, reference_document=no_findings))
    cases.append(_refused_case("samples-over-limit", _with_baseline(json.dumps(_samples(1001)))))
    cases.append(_refused_case("samples-200000", _with_baseline(json.dumps(_samples(200_000))), fast=True))
    return cases


def cases() -> list[Case]:
    rng = random.Random(f"{CATEGORY}-1")
    return _not_reports() + _forged() + _mutated_dynamic(rng)
