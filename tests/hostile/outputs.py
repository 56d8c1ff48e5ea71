"""Output targets: `-o` onto files the user owns (whatever their lines look like), onto the
report's own file by any spelling, the analysed code, the config, git's files, verify-perf's own
record and cache, directories, devices, FIFOs, links and descriptors; report folders that are
files or hold a hand-written report; standard output closed, full, or a pipe whose reader has gone
(in every format); standard error closed. A refused target is exit 2 with nothing written at all;
an accepted one changes only the file it names."""

from __future__ import annotations

import importlib.util
import os

from tests.hostile.case import CACHED, CLOSED, DEVNULL, FULL, GONE, REPORTS, Case
from tests.hostile.sources import TRAIN
from tests.hostile.trees import combine, files, link

CATEGORY = "outputs"
TRAIN_TREE = {"train.py": TRAIN}
USER_TEXTS = {
    "notes": "My notes.\nDo not lose me.\n",
    "looks-like-findings": "train.py:9:9: VP203 [HIGH] copied by hand\nFound 1 finding\nDecision: BLOCK\n",
    "indented": "    Score: 100/100\n",
    "github-lines": "::error file=x::mine\n",
    "json": '{"findings": []}\n',
    "report-copy": "# Performance Verification Report - train\n\n**Status: PASS**\n",
}


def _refused(name: str, build, argv: tuple[str, ...], *, fast: bool = False, stderr: str = "verify-perf: error:",
             outputs: tuple[str, ...] = ()) -> Case:
    return Case(CATEGORY, name, build, argv, 2, outputs=outputs, stderr=stderr, fast=fast)


def _user_files() -> list[Case]:
    cases = []
    for label, text in USER_TEXTS.items():
        build = files({**TRAIN_TREE, "out.txt": text})
        cases.append(_refused(f"o-onto-user-file:{label}", build, ("train.py", "-o", "out.txt"),
                              fast=label == "looks-like-findings"))
        cases.append(Case(CATEGORY, f"o-force-onto-user-file:{label}", build,
                          ("train.py", "-o", "out.txt", "--force", "--no-report"), 1,
                          outputs=CACHED + ("out.txt", ".verify-perf-outputs")))
    cases.append(Case(CATEGORY, "o-onto-empty-file", files({**TRAIN_TREE, "out.txt": ""}),
                      ("train.py", "-o", "out.txt", "--no-report"), 1, outputs=CACHED + ("out.txt", ".verify-perf-outputs")))
    owned = {
        "analysed-source": "train.py", "pyproject": "pyproject.toml", "git-config": ".git/config",
        "record": ".verify-perf-outputs", "report-record": "reports/.verify-perf-outputs",
        "cache-tag": ".verify_perf_cache/CACHEDIR.TAG", "key": "@HOME@/.cache/verify-perf/key",
        "thesis": "@HOME@/Documents/thesis.txt", "bashrc": "@HOME@/.bashrc",
    }

    def prepared(sandbox) -> None:
        sandbox.write("train.py", TRAIN)
        sandbox.write("pyproject.toml", "[project]\nname = 'mine'\n")
        sandbox.write(".git/config", "[core]\n\tbare = false\n")
        sandbox.verify("train.py", "--format", "json", "-o", "first.json")  # a record, a cache and a key exist
        sandbox.verify("train.py", "--no-report", "-o", "-")

    for label, target in owned.items():
        cases.append(_refused(f"o-onto:{label}", prepared, ("train.py", "-o", target, "--format", "json"),
                              fast=label == "analysed-source"))
    return cases


def _report_paths() -> list[Case]:
    tree = files(TRAIN_TREE)
    cases = []
    for label, target in {"same": "reports/train.md", "dotted": "./reports/train.md", "doubled": "reports//train.md",
                          "absolute": "@PROJECT@/reports/train.md", "parent": "../project/reports/train.md"}.items():
        cases.append(_refused(f"o-is-report:{label}", tree, ("train.py", "-o", target, "--format", "json"),
                              fast=label == "dotted"))
    cases.append(_refused("o-is-report:link", combine(tree, link("alias.md", "reports/train.md"),
                                                        files({"reports/keep.txt": "x"})),
                          ("train.py", "-o", "alias.md")))
    hand_written = files({**TRAIN_TREE, "reports/train.md": "# my own report\n"})
    cases.append(_refused("report-hand-written", hand_written, ("train.py",)))
    cases.append(Case(CATEGORY, "report-hand-written-forced", hand_written, ("train.py", "--force"), 1,
                      outputs=CACHED + REPORTS))
    forged_record = files({**TRAIN_TREE, "reports/train.md": "# my own report\n",
                           "reports/.verify-perf-outputs": '{"files": {"train.md": "' + "0" * 64 + '"}}\n'})
    cases.append(_refused("report-record-wrong-digest", forged_record, ("train.py",)))
    cases.append(_refused("report-dir-is-file", files({**TRAIN_TREE, "reports": "mine\n"}), ("train.py",)))
    cases.append(_refused("report-dir-home-with-report", files({**TRAIN_TREE, "~/train.md": "mine\n"}),
                          ("train.py", "--report-dir", "@HOME@")))
    cases.append(Case(CATEGORY, "report-dir-documents", tree, ("train.py", "--report-dir", "@HOME@/Documents"), 1,
                      outputs=CACHED + ("~/Documents/train.md", "~/Documents/.verify-perf-outputs")))
    cases.append(Case(CATEGORY, "report-dir-new-deep", tree, ("train.py", "--report-dir", "a/b/c"), 1,
                      outputs=CACHED + ("a/*",)))
    cases.append(_refused("report-dir-empty-name", tree, ("train.py", "--report-dir", "")))
    cases.append(_refused("task-traversal", tree, ("train.py", "--task", "../../home/x")))
    cases.append(_refused("task-empty", tree, ("train.py", "--task", "")))
    cases.append(Case(CATEGORY, "markdown-o-is-the-report", tree, ("train.py", "--format", "markdown", "-o", "r.md"), 1,
                      outputs=CACHED + ("r.md", ".verify-perf-outputs")))
    cases.append(_refused("markdown-o-onto-user-file", files({**TRAIN_TREE, "r.md": "mine\n"}),
                          ("train.py", "--format", "markdown", "-o", "r.md")))
    return cases


def _targets() -> list[Case]:
    tree = files(TRAIN_TREE)

    def fifo(sandbox) -> None:
        os.mkfifo(sandbox.path("pipe"))

    def folder(sandbox) -> None:
        sandbox.path("out").mkdir()

    refused = [
        ("o-directory", tree, ("train.py", "-o", ".")),
        ("o-new-directory-name", combine(tree, folder), ("train.py", "-o", "out")),
        ("o-trailing-slash", tree, ("train.py", "-o", "out.json/")),
        ("o-empty-name", tree, ("train.py", "-o", "")),
        ("o-link-to-thesis", combine(tree, link("out.txt", "@HOME@/Documents/thesis.txt")), ("train.py", "-o", "out.txt")),
        ("o-closed-descriptor", tree, ("train.py", "-o", "/dev/fd/97", "--no-report")),
    ]
    cases = [_refused(name, build, argv, fast=name == "o-link-to-thesis") for name, build, argv in refused]
    # Refused only when written (a device that fills up, a FIFO nobody reads: opening it to ask would
    # end a reader's input): the analysis ran, nothing else is written.
    cases.append(_refused("o-fifo-without-reader", combine(tree, fifo), ("train.py", "-o", "pipe"), outputs=CACHED))
    cases.append(_refused("o-dev-full", tree, ("train.py", "-o", "/dev/full"), outputs=CACHED))
    cases.append(_refused("o-proc-file", tree, ("train.py", "-o", "/proc/self/comm"), outputs=CACHED))
    if importlib.util.find_spec("torch") is not None:  # the harness is installed: refused before it runs
        cases.append(_refused("bench-o-onto-user-file", files({"notes.txt": "mine\n"}),
                              ("bench", "--preset", "tiny", "-o", "notes.txt"), stderr="error: refusing"))
    accepted = [
        ("o-dev-null", tree, ("train.py", "-o", "/dev/null", "--no-report"), ()),
        ("o-dev-stdout", tree, ("train.py", "-o", "/dev/stdout", "--no-report"), ()),
        ("o-dev-stderr", tree, ("train.py", "-o", "/dev/stderr", "--no-report"), ()),
        ("o-dev-fd-1", tree, ("train.py", "-o", "/dev/fd/1", "--no-report"), ()),
        ("o-dash", tree, ("train.py", "-o", "-", "--no-report"), ()),
        ("o-dangling-link", combine(tree, link("out.json", "made.json")), ("train.py", "-o", "out.json", "--no-report"),
         ("made.json", ".verify-perf-outputs")),
        ("o-missing-folders", tree, ("train.py", "-o", "nowhere/deeper/out.json", "--no-report"), ("nowhere/*",)),
        ("o-new-file", tree, ("train.py", "-o", "out.json", "--format", "json", "--no-report"),
         ("out.json", ".verify-perf-outputs")),
        ("o-rewrite-own-output", combine(tree, lambda s: s.verify("train.py", "-o", "out.txt", "--no-report")),
         ("train.py", "-o", "out.txt", "--no-report"), ("out.txt", ".verify-perf-outputs")),
    ]
    cases += [Case(CATEGORY, name, build, argv, 1, outputs=CACHED + outputs) for name, build, argv, outputs in accepted]
    return cases


def _standard_streams() -> list[Case]:
    tree = files(TRAIN_TREE)
    formats = {"text": (), "json": ("--format", "json"), "sarif": ("--format", "sarif"), "github": ("--format", "github"),
               "markdown": ("--format", "markdown", "-o", "-"), "statistics": ("--statistics",),
               "concise": ("--format", "concise"), "gitlab": ("--format", "gitlab"), "junit": ("--format", "junit")}
    cases = []
    for label, argv in formats.items():
        for mode, code in ((CLOSED, 2), (FULL, 2), (GONE, 1), (DEVNULL, 1)):
            cases.append(Case(CATEGORY, f"stdout-{mode}:{label}", tree, ("train.py", "--no-report", *argv), code,
                              outputs=CACHED, stdout=mode, stderr="standard output" if code == 2 else "",
                              fast=(mode, label) in {(GONE, "json"), (FULL, "text")}))
    commands = {"rules": ("rule", "--all"), "rule-json": ("rule", "--all", "--format", "json"),
                "show-settings": ("train.py", "--show-settings"), "show-files": ("train.py", "--show-files"),
                "version": ("--version",), "help": ("--help",)}
    for label, argv in commands.items():
        for mode, code in ((CLOSED, 2), (FULL, 2), (GONE, 0)):
            cases.append(Case(CATEGORY, f"stdout-{mode}:{label}", tree, argv, code, stdout=mode))
    cases.append(Case(CATEGORY, "stdout-closed:with-o-file", tree, ("train.py", "-o", "out.txt", "--no-report"), 1,
                      outputs=CACHED + ("out.txt", ".verify-perf-outputs"), stdout=CLOSED))
    cases.append(Case(CATEGORY, "stderr-closed", tree, ("train.py", "--no-report"), 1, outputs=CACHED,
                      preexec=_close_stderr))
    cases.append(Case(CATEGORY, "stderr-closed:refused-o", files({**TRAIN_TREE, "out.txt": "mine\n"}),
                      ("train.py", "-o", "out.txt"), 2, preexec=_close_stderr))
    cases.append(Case(CATEGORY, "stdin-closed", tree, ("train.py", "--no-report"), 1, outputs=CACHED,
                      preexec=_close_stdin))
    return cases


def _close_stderr() -> None:
    os.close(2)


def _close_stdin() -> None:
    os.close(0)


def cases() -> list[Case]:
    return _user_files() + _report_paths() + _targets() + _standard_streams()
