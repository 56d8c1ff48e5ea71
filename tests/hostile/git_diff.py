"""Git edge cases for `--diff BASE`: attributes and drivers that change how git presents a change
(`-diff`, `binary`, textconv, external diff, user settings such as `diff.noprefix` or
`color.diff = always`), symbolic links, type changes, renames, copies, deletions, two and nested
repositories, detached HEAD, no commits, shallow clones, refs that look like options, and file
names git quotes. In each, the change adds a per-step synchronize (exit 1) unless the case says
otherwise; the gate must see it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

from tests.hostile.case import CACHED, Case
from tests.hostile.sandbox import Sandbox
from tests.hostile.sources import GOOD, TRAIN

CATEGORY = "git-diff"
DIFF = ("--format", "json", "--no-report", "--diff", "main")
# TRAIN is GOOD's loop with a synchronize added: GOOD on the base, TRAIN on the change.
BASE_FILES = {"train.py": GOOD, "util.py": "import torch\n\n\ndef helper(x):\n    return x\n", "README.md": "# project\n"}


def _repo(sandbox: Sandbox, folder: str = "", files: dict[str, str] | None = None) -> None:
    """A repository with one commit on main, then a feature branch checked out."""
    where = sandbox.path(folder) if folder else sandbox.project
    where.mkdir(parents=True, exist_ok=True)
    sandbox.git("init", "-q", "-b", "main", cwd=folder)
    for name, text in (BASE_FILES if files is None else files).items():
        sandbox.write(os.path.join(folder, name), text)
    sandbox.git("add", "-A", cwd=folder)
    sandbox.git("commit", "-q", "-m", "base", cwd=folder)
    sandbox.git("checkout", "-q", "-b", "feature", cwd=folder)


def _commit(sandbox: Sandbox, folder: str = "") -> None:
    sandbox.git("add", "-A", cwd=folder)
    sandbox.git("commit", "-q", "-m", "change", cwd=folder)


def _change(*steps: Callable[[Sandbox], None], commit: bool = True) -> Callable[[Sandbox], None]:
    def build(sandbox: Sandbox) -> None:
        _repo(sandbox)
        for step in steps:
            step(sandbox)
        if commit:
            _commit(sandbox)

    return build


def _write(name: str, text: str | bytes) -> Callable[[Sandbox], None]:
    return lambda sandbox: sandbox.write(name, text)


def _user_config(text: str) -> Callable[[Sandbox], None]:
    def step(sandbox: Sandbox) -> None:
        with open(sandbox.path("~/.gitconfig"), "a", encoding="utf-8") as handle:
            handle.write(text)

    return step


def _symlink(name: str, target: str) -> Callable[[Sandbox], None]:
    def step(sandbox: Sandbox) -> None:
        path = sandbox.path(name)
        if path.is_symlink() or path.exists():
            path.unlink()
        os.symlink(target, path)

    return step


def _remove(name: str) -> Callable[[Sandbox], None]:
    return lambda sandbox: sandbox.path(name).unlink()


BAD = _write("train.py", TRAIN)
ATTRIBUTES = {
    "minus-diff": "*.py -diff\n", "binary": "*.py binary\n", "diff-driver-textconv": "*.py diff=hide\n",
    "diff-python": "*.py diff=python\n", "minus-text": "*.py -text\n", "eol-crlf": "*.py eol=crlf\n",
    "text-auto": "* text=auto\n", "whitespace": "*.py whitespace=-trailing-space\n", "merge-binary": "*.py merge=binary\n",
    "export-ignore": "*.py export-ignore\n", "linguist-generated": "*.py linguist-generated\n",
    "every-attribute": "* -diff -text binary diff=hide\n",
}
USER_CONFIGS = {
    "noprefix": "[diff]\n\tnoprefix = true\n",
    "mnemonic-prefix": "[diff]\n\tmnemonicPrefix = true\n",
    "src-dst-prefix": "[diff]\n\tsrcPrefix = x/\n\tdstPrefix = y/\n",
    "relative": "[diff]\n\trelative = true\n",
    "color-always": "[color]\n\tui = always\n\tdiff = always\n",
    "external-true": "[diff]\n\texternal = /bin/true\n",
    "renames-copies": "[diff]\n\trenames = copies\n",
    "patience": "[diff]\n\talgorithm = patience\n",
    "context-0": "[diff]\n\tcontext = 0\n\tinterHunkContext = 100\n",
    "textconv-empty": "[diff \"hide\"]\n\ttextconv = true\n",
    "quote-path": "[core]\n\tquotePath = true\n",
    "autocrlf": "[core]\n\tautocrlf = true\n",
    "untracked-no": "[status]\n\tshowUntrackedFiles = no\n",
    "ignore-submodules": "[diff]\n\tignoreSubmodules = all\n",
    "pager": "[core]\n\tpager = false\n[pager]\n\tdiff = true\n",
    "order-file": "[diff]\n\torderFile = ~/order.txt\n",
    "supress-blank": "[diff]\n\tsuppressBlankEmpty = true\n",
    "ws-error": "[diff]\n\twsErrorHighlight = all\n[core]\n\twhitespace = cr-at-eol\n",
    "excludes-file": "[core]\n\texcludesFile = ~/.gitignore_global\n",
    "indent-heuristic": "[diff]\n\tindentHeuristic = false\n",
}


def _attribute_cases() -> list[Case]:
    cases = []
    for name, text in ATTRIBUTES.items():
        build = _change(_write(".gitattributes", text), _user_config("[diff \"hide\"]\n\ttextconv = true\n"), BAD)
        cases.append(Case(CATEGORY, f"attributes:{name}", build, (".", *DIFF), 1, outputs=CACHED,
                          must_find=(("train.py", "VP203"),), fast=name == "minus-diff"))
    for name, text in USER_CONFIGS.items():
        steps = [_user_config(text), BAD]
        if name == "excludes-file":
            steps.insert(0, _write("~/.gitignore_global", "*.py\n"))
        if name == "order-file":
            steps.insert(0, _write("~/order.txt", "*.md\nutil.py\n"))
        build = _change(*steps, commit=name not in ("untracked-no", "excludes-file"))
        cases.append(Case(CATEGORY, f"user-config:{name}", build, (".", *DIFF), 1, outputs=CACHED,
                          must_find=(("train.py", "VP203"),), fast=name == "color-always"))
    environments = {
        "git-diff-opts": {"GIT_DIFF_OPTS": "--unified=20"},
        "git-external-diff": {"GIT_EXTERNAL_DIFF": "/bin/true"},
        "git-pager": {"GIT_PAGER": "cat /dev/zero"},
        "git-config-count": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "diff.noprefix", "GIT_CONFIG_VALUE_0": "true"},
        "git-trace": {"GIT_TRACE": "1", "GIT_TRACE_PACKET": "1"},
        "git-literal-pathspecs-off": {"GIT_LITERAL_PATHSPECS": "0", "GIT_GLOB_PATHSPECS": "1"},
    }
    for name, env in environments.items():
        cases.append(Case(CATEGORY, f"environment:{name}", _change(BAD), (".", *DIFF), 1, env=env, outputs=CACHED,
                          must_find=(("train.py", "VP203"),)))
    return cases


def _shape_cases() -> list[Case]:
    """Links, type changes, renames, copies, deletions and odd names."""
    def link_base(sandbox: Sandbox) -> None:
        sandbox.write("other.py", GOOD)
        os.symlink("other.py", sandbox.path("link.py"))

    def with_link_base(*steps):
        def build(sandbox: Sandbox) -> None:
            _repo(sandbox, files={**BASE_FILES})
            link_base(sandbox)
            _commit(sandbox)
            for step in steps:
                step(sandbox)
            _commit(sandbox)

        return build

    def renamed(modify: bool):
        def step(sandbox: Sandbox) -> None:
            sandbox.git("mv", "train.py", "renamed.py")
            if modify:
                sandbox.write("renamed.py", TRAIN)

        return step

    def base_with(text: str):
        def build_base(*steps, commit=True):
            def build(sandbox: Sandbox) -> None:
                _repo(sandbox, files={**BASE_FILES, "train.py": text})
                for step in steps:
                    step(sandbox)
                if commit:
                    _commit(sandbox)

            return build

        return build_base

    bad_base = base_with(TRAIN)
    shapes = [
        ("committed", _change(BAD), ("train.py",), 1),
        ("uncommitted", _change(BAD, commit=False), ("train.py",), 1),
        ("untracked-new-file", _change(_write("new.py", TRAIN), commit=False), ("new.py",), 1),
        ("staged-only", _change(BAD, lambda s: s.git("add", "train.py"), commit=False), ("train.py",), 1),
        ("link-to-changed-file", _change(BAD, _symlink("alias.py", "train.py")), ("train.py",), 1),
        ("link-becomes-bad-file", with_link_base(_remove("link.py"), _write("link.py", TRAIN)), ("link.py",), 1),
        ("file-becomes-link-to-bad", bad_base(_write("bad.py", TRAIN), _remove("train.py"), _symlink("train.py", "bad.py")),
         ("bad.py",), 1),
        ("renamed-and-changed", _change(renamed(True)), ("renamed.py",), 1),
        # A pure rename moves findings the base already had: accepted, not new (issue 24's identity).
        ("renamed-only", bad_base(renamed(False)), (), 0),
        ("copied", bad_base(_write("copy.py", TRAIN)), ("copy.py",), 1),
        ("deleted-other-file", _change(BAD, _remove("util.py")), ("train.py",), 1),
        ("mode-change-only", bad_base(lambda s: os.chmod(s.path("train.py"), 0o755)), (), 0),
        ("unchanged-bad-code", bad_base(_write("README.md", "# changed\n")), (), 0),
        ("space-name", _change(_write("my train.py", TRAIN)), ("my train.py",), 1),
        ("newline-name", _change(_write("new\nline.py", TRAIN)), ("new\nline.py",), 1),
        ("quote-name", _change(_write('say "hi".py', TRAIN)), ('say "hi".py',), 1),
        ("unicode-name", _change(_write("训练.py", TRAIN)), ("训练.py",), 1),
        ("pathspec-magic-name", _change(_write(":(exclude)train.py", TRAIN)), (":(exclude)train.py",), 1),
        ("glob-name", _change(_write("*.py", TRAIN)), ("*.py",), 1),
        ("dash-name", _change(_write("-rf.py", TRAIN)), ("-rf.py",), 1),
        ("deep-folder", _change(_write("a/b/c/d/e/train.py", TRAIN)), ("a/b/c/d/e/train.py",), 1),
        ("crlf-file", _change(_write("train.py", TRAIN.replace("\n", "\r\n"))), ("train.py",), 1),
        ("notebook", _change(_write("train.ipynb", _notebook(TRAIN))), ("train.ipynb",), 1),
        ("excluded-folder", _change(_write("node_modules/train.py", TRAIN)), (), 0),
        ("many-files", _change(*[_write(f"m/f{i}.py", "import torch\nX = 1\n") for i in range(500)], BAD),
         ("train.py",), 1),
        ("binary-beside", _change(_write("data.bin", bytes(range(256)) * 4000), BAD), ("train.py",), 1),
    ]
    return [Case(CATEGORY, f"shape:{name}", build, (".", *DIFF), code, outputs=CACHED,
                 must_find=tuple((path, "VP203") for path in must), fast=name in ("link-becomes-bad-file", "renamed-only"))
            for name, build, must, code in shapes]


def _notebook(code: str) -> str:
    import json

    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": code.splitlines(keepends=True)}
    return json.dumps({"cells": [cell], "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def _repository_cases() -> list[Case]:
    def two_repos(sandbox: Sandbox) -> None:
        for folder in ("one", "two"):
            _repo(sandbox, folder)
        sandbox.write("two/train.py", TRAIN)
        _commit(sandbox, "two")

    def nested_new_repo(sandbox: Sandbox) -> None:
        _repo(sandbox)
        _repo(sandbox, "vendor/inner", files={"train.py": TRAIN})

    def detached(sandbox: Sandbox) -> None:
        _repo(sandbox)
        sandbox.write("train.py", TRAIN)
        _commit(sandbox)
        sandbox.git("checkout", "-q", "--detach", "HEAD")

    def unborn(sandbox: Sandbox) -> None:
        sandbox.git("init", "-q", "-b", "main")
        sandbox.write("train.py", TRAIN)

    def not_a_repo(sandbox: Sandbox) -> None:
        sandbox.write("train.py", TRAIN)

    def shallow(sandbox: Sandbox) -> None:
        _repo(sandbox, "/origin")
        sandbox.write("/origin/train.py", TRAIN)
        _commit(sandbox, "/origin")
        sandbox.git("clone", "-q", "--depth", "1", "--branch", "feature", f"file://{sandbox.path('/origin')}", ".")

    def worktree(sandbox: Sandbox) -> None:
        _repo(sandbox, "/main-checkout")
        sandbox.git("worktree", "add", "-q", "-b", "topic", str(sandbox.project / "wt"), cwd="/main-checkout")
        sandbox.write("wt/train.py", TRAIN)

    def merged_base(sandbox: Sandbox) -> None:
        _repo(sandbox)
        sandbox.write("train.py", TRAIN)
        _commit(sandbox)
        sandbox.git("checkout", "-q", "main")
        sandbox.write("README.md", "# moved on\n")
        _commit(sandbox)
        sandbox.git("checkout", "-q", "feature")

    def submodule(sandbox: Sandbox) -> None:
        _repo(sandbox, "/library", files={"train.py": TRAIN})
        _repo(sandbox)
        sandbox.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sandbox.path("/library")), "lib")
        _commit(sandbox)

    repositories = [
        ("two-repositories", two_repos, ("one", "two"), DIFF, 1, (("two/train.py", "VP203"),)),
        ("nested-new-repository", nested_new_repo, (".",), DIFF, 1, (("vendor/inner/train.py", "VP203"),)),
        ("detached-head", detached, (".",), DIFF, 1, (("train.py", "VP203"),)),
        ("base-moved-on", merged_base, (".",), DIFF, 1, (("train.py", "VP203"),)),
        ("worktree", worktree, ("wt",), DIFF, 1, (("wt/train.py", "VP203"),)),
        ("submodule-added", submodule, (".",), DIFF, 1, (("lib/train.py", "VP203"),)),
        ("unborn-branch", unborn, (".",), DIFF, 2, ()),
        ("not-a-repository", not_a_repo, (".",), DIFF, 2, ()),
        ("shallow-clone-without-base", shallow, (".",), DIFF, 2, ()),
        ("missing-ref", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", "no-such-branch"), 2, ()),
        ("ref-like-option", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff=--output=/tmp/x"), 2, ()),
        ("ref-with-dash", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", "-p"), 2, ()),
        ("ref-range", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", "main..feature"), 2, ()),
        ("ref-upstream-unset", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", "@{upstream}"), 2, ()),
        ("ref-empty", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", ""), 2, ()),
        ("ref-head-nothing-changed", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", "HEAD"), 0, ()),
        ("ref-sha", _change(BAD), (".",), ("--format", "json", "--no-report", "--diff", "main~0"), 1,
         (("train.py", "VP203"),)),
        ("git-dir-elsewhere", _change(BAD), (".",), DIFF, 2, ()),
    ]
    cases = []
    for name, build, paths, argv, code, must in repositories:
        env = {"GIT_DIR": "@ROOT@/nowhere"} if name == "git-dir-elsewhere" else {}
        outputs = CACHED + (("/origin/*",) if name == "shallow-clone-without-base" else ())
        cases.append(Case(CATEGORY, f"repository:{name}", build, (*paths, *argv), code, env=env, outputs=outputs,
                          must_find=must, fast=name in ("two-repositories", "unborn-branch")))
    return cases


def cases() -> list[Case]:
    if shutil.which("git") is None:
        return []  # nothing to diff with
    return _attribute_cases() + _shape_cases() + _repository_cases()
