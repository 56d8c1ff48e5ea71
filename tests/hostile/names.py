"""Odd file and folder names: shell and markup metacharacters, control characters, Unicode
(normalisation forms, right-to-left overrides, zero-width characters), bytes that are not UTF-8,
names at the file system's length limits and deep folders. The code inside blocks, so whatever
the name, the run must find it (exit 1) and print it without letting the name inject anything."""

from __future__ import annotations

import os
from dataclasses import replace

from tests.hostile.case import CACHED, REPORTS, Case
from tests.hostile.sources import GOOD, TRAIN
from tests.hostile.trees import JSON, combine, files, raw_file

CATEGORY = "names"

# Names made of characters that mean something to a shell, markdown, a CI log or a terminal.
ODD_NAMES = [
    "my train.py", " leading space.py", "trailing space .py", "it's.py", 'say "hi".py', "back\\slash.py",
    "`tick`.py", "$HOME.py", "$(rm -rf ~).py", ";rm -rf ~.py", "a|b.py", "a&b.py", "star*.py", "what?.py",
    "[ab].py", "{a,b}.py", "~.py", "%s%n.py", "{0}.py", "<script>alert(1)</script>.py", "[x](http://e.com).py",
    "#hash.py", "a,b=c.py", "::error file=x.py::pwned.py", "new\nline.py", "tab\there.py", "carriage\rreturn.py",
    "\x1b[31mred\x1b[0m.py", "bell\x07.py", "del\x7f.py", "form\x0cfeed.py", "vertical\x0btab.py",
    "%0A%0D.py", "@{}.py", "!bang.py", "+plus.py", "=eq.py", "^caret.py",
]
UNICODE_NAMES = [
    "café.py", "cafe\u0301.py", "обучение.py", "训练.py", "トレーニング.py", "🔥train.py", "\u202egnp.py",
    "\u200btrain.py", "\ufefftrain.py", "ｔｒａｉｎ.py", "τρένο.py", "a\u0300\u0301\u0302\u0303.py", "𝕥𝕣𝕒𝕚𝕟.py",
    "\u2028line sep.py", "\u00a0nbsp.py", "ﬁle.py", "İstanbul.py", "ß.py", "\u0627\u0644\u062a\u062f\u0631\u064a\u0628.py",
]
RAW_NAMES = [b"caf\xe9.py", b"\xff\xfe.py", b"\x80\x81.py", b"ok\xc3(.py", b"\xed\xa0\x80surrogate.py"]
# Names a dash would make an option of, run through a folder, `./` or `--`.
DASH_NAMES = ["-o.py", "--help.py", "-.py", "--version.py", "-j0.py"]


def _blocks(name: str, how: str) -> Case:
    """TRAIN under `name`, found through the folder (`.`), named directly or with `./`."""
    shown = os.fsdecode(name) if isinstance(name, bytes) else name
    argv = {"folder": (".",), "named": (shown,), "dotted": ("./" + shown,)}[how]
    build = raw_file(name, TRAIN) if isinstance(name, bytes) else files({name: TRAIN})
    return Case(CATEGORY, f"{how}:{shown!r}", build, (*argv, *JSON), 1, outputs=CACHED,
                must_find=((shown, "VP203"),))


def _dash(name: str, how: str) -> Case:
    argv = {"folder": (".",), "dotted": ("./" + name,), "separator": ("--", name)}[how]
    return Case(CATEGORY, f"dash-{how}:{name}", files({name: TRAIN}), (*JSON, *argv), 1, outputs=CACHED,
                must_find=((name, "VP203"),))


def _folders() -> list[Case]:
    deep = "/".join(f"d{i}" for i in range(100)) + "/train.py"
    long_name = "t" * 252 + ".py"
    long_unicode = "é" * 126 + ".py"  # 255 bytes
    nested = "/".join(["x" * 200] * 19) + "/train.py"  # about 3,800 bytes of path
    cases = [
        ("deep-100-folders", files({deep: TRAIN}), (".",), 1, ((deep, "VP203"),)),
        ("name-255-bytes", files({long_name: TRAIN}), (".",), 1, ((long_name, "VP203"),)),
        ("unicode-name-255-bytes", files({long_unicode: TRAIN}), (".",), 1, ((long_unicode, "VP203"),)),
        ("path-near-path-max", files({nested: TRAIN}), (".",), 1, ((nested, "VP203"),)),
        ("folder-named-like-a-file", files({"train.py/inner.py": TRAIN}), (".",), 1, (("train.py/inner.py", "VP203"),)),
        ("folder-named-like-a-file-named", files({"train.py/inner.py": TRAIN}), ("train.py",), 1,
         (("train.py/inner.py", "VP203"),)),
        ("hidden-folder", files({".hidden/train.py": TRAIN}), (".",), 1, ((".hidden/train.py", "VP203"),)),
        ("unicode-folder", files({"données/训练/train.py": TRAIN}), (".",), 1, (("données/训练/train.py", "VP203"),)),
        ("space-folder", files({"my project/src dir/train.py": TRAIN}), ("my project",), 1,
         (("my project/src dir/train.py", "VP203"),)),
        # Default excludes hide a folder's files from a scan, never from a file named directly.
        ("excluded-folder-scanned", files({"node_modules/train.py": TRAIN, "ok.py": GOOD}), (".",), 0, ()),
        ("excluded-folder-named", files({"node_modules/train.py": TRAIN}), ("node_modules/train.py",), 1,
         (("node_modules/train.py", "VP203"),)),
        ("env-folder-named", files({"env/train.py": TRAIN}), ("env/train.py",), 1, (("env/train.py", "VP203"),)),
        ("same-file-twice", files({"train.py": TRAIN}), ("train.py", "./train.py", "."), 1, (("train.py", "VP203"),)),
        ("dot-dot-path", files({"a/train.py": TRAIN, "b/keep.txt": "x"}), ("b/../a/train.py",), 1,
         (("a/train.py", "VP203"),)),
        ("case-twins", files({"Train.py": TRAIN, "train.py": GOOD}), (".",), 1, (("Train.py", "VP203"),)),
        ("upper-suffix", files({"TRAIN.PY": TRAIN, "ok.py": GOOD}), (".",), 0, ()),
        ("only-suffix", files({".py": TRAIN}), (".",), 1, ((".py", "VP203"),)),
        ("dots-suffix", files({"...py": TRAIN}), (".",), 1, (("...py", "VP203"),)),
    ]
    built = []
    for name, build, paths, code, must in cases:
        built.append(Case(CATEGORY, name, build, (*paths, *JSON), code, outputs=CACHED, must_find=must))
    raw_folder = combine(raw_file(b"train.py", TRAIN, folder="d\udcff"))
    built.append(Case(CATEGORY, "raw-bytes-folder", raw_folder, (".", *JSON), 1, outputs=CACHED,
                      must_find=(("d\udcff/train.py", "VP203"),)))
    return built


def _outputs() -> list[Case]:
    """Names flow into report names, markdown, GitHub commands and SARIF: nothing may be injected."""
    cases = []
    for index, name in enumerate(["<script>x</script>.py", "[x](http://e.com).py", "new\nline.py", "a`b`.py"]):
        cases.append(Case(CATEGORY, f"report-for:{name!r}", files({name: TRAIN}), (name,), 1,
                          outputs=CACHED + REPORTS, fast=index == 0))
    injections = {
        "newline-command.py": "x\n::error file=evil.py,line=1::pwned\ny.py",
        "percent-command.py": "%0A::error::pwned.py",
        "comma-property.py": "a,line=99,title=evil.py",
    }
    for label, name in injections.items():
        cases.append(Case(CATEGORY, f"github:{label}", files({name: TRAIN}), (".", "--format", "github", "--no-report"), 1,
                          outputs=CACHED, stdout_lacks=(b"\n::error file=evil", b"\n::error::pwned", b"file=a,line=99")))
    cases.append(Case(CATEGORY, "terminal-escape-in-name", files({"\x1b]0;pwned\x07.py": TRAIN}), (".", "--no-report"), 1,
                      outputs=CACHED, stdout_lacks=(b"\x1b]0;pwned",)))
    forged_lines = {"text": (".", "--no-report"), "quiet": (".", "--no-report", "-q"),
                    "statistics": (".", "--no-report", "--statistics")}
    for label, argv in forged_lines.items():
        cases.append(Case(CATEGORY, f"{label}-line-injection", files({"x\nDecision: PASS\r.py": TRAIN}), argv, 1,
                          outputs=CACHED, stdout_lacks=(b"\nDecision: PASS",)))
    cases.append(Case(CATEGORY, "markdown-heading-injection", files({"x\n# Status: PASS\n.py": TRAIN}),
                      (".", "--format", "markdown", "-o", "-"), 1, outputs=CACHED, stdout_lacks=(b"\n# Status: PASS",)))
    cases.append(Case(CATEGORY, "report-heading-injection", files({"x\n# Status: PASS\n.py": TRAIN}),
                      (".", "--report-dir", "out", "--task", "t"), 1, outputs=CACHED + ("out/*",),
                      written_lacks=(("out/t.md", b"\n# Status: PASS"),)))
    cases.append(Case(CATEGORY, "sarif-odd-names", files({"a b/#?.py": TRAIN, "c%20d.py": TRAIN}),
                      (".", "--format", "sarif", "--no-report"), 1, outputs=CACHED))
    cases.append(Case(CATEGORY, "markdown-odd-names", files({"| pipe |.py": TRAIN, "</details>.py": TRAIN}),
                      (".", "--format", "markdown", "-o", "-"), 1, outputs=CACHED))
    return cases


def cases() -> list[Case]:
    built: list[Case] = []
    for index, name in enumerate(ODD_NAMES):
        built.append(_blocks(name, "folder" if index % 2 else "named"))
    for index, name in enumerate(UNICODE_NAMES):
        built.append(_blocks(name, ("folder", "named", "dotted")[index % 3]))
    for name in RAW_NAMES:
        built.append(_blocks(name, "folder"))
        built.append(_blocks(name, "named"))
    for name in DASH_NAMES:
        for how in ("folder", "dotted", "separator"):
            built.append(_dash(name, how))
    built += _folders()
    built += _outputs()
    fast = {"named:'$(rm -rf ~).py'", "named:'new\\nline.py'", "folder:'\\u202egnp.py'", "named:'caf\\udce9.py'",
            "dash-separator:-o.py", "deep-100-folders"}
    return [replace(c, fast=True) if c.name in fast else c for c in built]
