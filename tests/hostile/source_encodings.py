"""Encodings, byte-order marks and line endings. The oracle is Python itself, asked without
running anything: its parser says whether the bytes are a valid module, and
`importlib.util.decode_source` what text Python reads (its encoding cookie, BOM and universal
newlines). A valid file must give exactly the findings of that text written as plain UTF-8 with
`\\n` line ends (lines counted as Python counts them, suppressions included); an invalid one a
VP900, while the blocking file beside it still blocks."""

from __future__ import annotations

import importlib.util
import random
from dataclasses import replace

from tests.hostile.case import CACHED, Case
from tests.hostile.sources import BAD_TRAIN, CORPUS, TRAIN, python_rejects
from tests.hostile.trees import JSON, files

CATEGORY = "encodings"
TEXT = "naïve café ünïcödé — 训练 データ"
COOKIE_CODECS = [
    "latin-1", "iso-8859-1", "latin1", "Latin-1", "iso-8859-15", "cp1252", "cp1251", "koi8-r", "mac-roman", "cp437",
    "shift_jis", "euc-jp", "gb2312", "gbk", "gb18030", "big5", "euc-kr", "hz", "iso2022_jp", "utf-8", "utf8", "UTF-8",
    "utf_8", "utf-8-sig", "utf-7", "idna", "raw_unicode_escape", "unicode_escape", "ascii", "utf-16", "utf-16-le",
    "utf-32", "cp037", "cp500", "undefined", "punycode", "rot13", "hex", "base64", "zlib", "bz2", "uu", "quopri",
    "no-such-codec", "mbcs", "cp65001", "charmap", "palmos", "ptcp154", "tis-620",
]
COOKIE_STYLES = {
    "plain": "# coding: {}\n",
    "emacs": "# -*- coding: {} -*-\n",
    "vim": "# vim: set fileencoding={} :\n",
    "pep263": "# -*- coding: {}; mode: python -*-\n",
}


def python_view(data: bytes) -> tuple[bool, str | None]:
    """(whether Python parses the bytes, the text it reads as plain `\\n` lines, or None)."""
    valid = not python_rejects(data)
    try:
        text = importlib.util.decode_source(data)
        text.encode("utf-8")
    except (SyntaxError, ValueError, UnicodeError, LookupError):
        text = None
    return valid, text


def _judged(name: str, data: bytes, *, fast: bool = False) -> Case:
    """`data` as train.py beside a blocking other.py: a valid module must read as its text does;
    an invalid one is a VP900, and other.py still blocks."""
    valid, text = python_view(data)
    build = files({"train.py": data, "other.py": TRAIN})
    if valid and text is not None:
        # A cookie line stays (as a comment) so line numbers agree; the text is plain UTF-8 now.
        reference = files({"train.py": _without_cookie(text).encode("utf-8"), "other.py": TRAIN})
        return Case(CATEGORY, name, build, (".", *JSON), 1, outputs=CACHED, must_find=(("other.py", "VP203"),),
                    reference=reference, fast=fast)
    return Case(CATEGORY, name, build, (".", *JSON), 1, outputs=CACHED, unanalysable=("train.py",),
                must_find=(("other.py", "VP203"),), fast=fast)


def _without_cookie(text: str) -> str:
    lines = text.split("\n")
    for index in range(min(2, len(lines))):
        if "coding" in lines[index] and lines[index].lstrip().startswith("#"):
            lines[index] = "# a cookie was here"
    return "\n".join(lines)


def _encoded(codec: str, text: str) -> bytes:
    try:
        return text.encode(codec)
    except (UnicodeError, LookupError, TypeError):
        return text.encode("ascii", "backslashreplace")


def _cookie_cases() -> list[Case]:
    cases = []
    for index, codec in enumerate(COOKIE_CODECS):
        style = list(COOKIE_STYLES)[index % len(COOKIE_STYLES)]
        body = TRAIN.replace("import torch\n", f"import torch\nLABEL = \"{TEXT}\"  # {TEXT}\n", 1)
        data = COOKIE_STYLES[style].format(codec).encode("ascii") + _encoded(codec, body)
        cases.append(_judged(f"cookie-{style}:{codec}", data, fast=codec in ("latin-1", "undefined")))
    specials = {
        "cookie-line-2": b"#!/usr/bin/env python\n# coding: latin-1\n" + _encoded("latin-1", "# " + TEXT[:10] + "\n") + TRAIN.encode(),
        "cookie-line-3-ignored": b"#!/usr/bin/env python\n\n# coding: latin-1\n# caf\xe9\n" + TRAIN.encode(),
        "bom-and-latin-1-cookie": b"\xef\xbb\xbf# coding: latin-1\n" + TRAIN.encode(),
        "bom-and-utf-8-cookie": b"\xef\xbb\xbf# coding: utf-8\n" + TRAIN.encode(),
        "unicode-escape-lone-surrogate": b"# coding: unicode_escape\n# \\ud800\n" + TRAIN.encode(),
        "unicode-escape-newline-escape": b"# coding: unicode_escape\nX = 1  # \\n\\n\\n\n" + TRAIN.encode(),
        "raw-unicode-escape-surrogate": b"# coding: raw_unicode_escape\n# \\ud800\n" + TRAIN.encode(),
        "utf-16-bom": TRAIN.encode("utf-16"),
        "utf-32-bom": TRAIN.encode("utf-32"),
        "utf-16-le-no-bom": TRAIN.encode("utf-16-le"),
        "two-cookies": b"# coding: latin-1\n# coding: utf-8\n# caf\xe9\n" + TRAIN.encode(),
        "cookie-in-string": b"X = '# coding: latin-1'\n# caf\xe9\n" + TRAIN.encode(),
        "very-long-cookie-line": b"# coding: " + b"a" * 100_000 + b"\n" + TRAIN.encode(),
        "cookie-after-backslash": b"x = 1 \\\n# coding: latin-1\n" + TRAIN.encode(),
    }
    cases += [_judged(name, data) for name, data in specials.items()]
    return cases


def _undecodable(rng: random.Random) -> list[Case]:
    """Bytes that are not UTF-8 (no cookie) in a comment, a string, an identifier or alone."""
    bad = [b"\xe9", b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xc0\xaf", b"\xfe\xff"]
    places = ["comment", "string", "code", "end"]
    cases = []
    for index in range(24):
        junk, place = rng.choice(bad), places[index % len(places)]
        lines = TRAIN.encode().split(b"\n")
        at = rng.randrange(1, len(lines) - 1)
        if place == "comment":
            lines.insert(at, b"# " + junk)
        elif place == "string":
            lines.insert(at, b"X = '" + junk + b"'" if not lines[at].startswith(b" ") else b"        x_ = '" + junk + b"'")
        elif place == "code":
            lines[at] = lines[at] + junk
        else:
            lines.append(junk)
        cases.append(_judged(f"undecodable-{place}-{index}", b"\n".join(lines)))
    return cases


def _line_end_variants(name: str, text: str, rng: random.Random) -> dict[str, bytes]:
    lines = text.split("\n")

    def joined(ends) -> bytes:
        return "".join(line + end for line, end in zip(lines, ends)).encode()

    count = len(lines)
    return {
        f"{name}-crlf": joined(["\r\n"] * count),
        f"{name}-cr": joined(["\r"] * count),
        f"{name}-mixed": joined([rng.choice(["\n", "\r\n", "\r"]) for _ in range(count)]),
        f"{name}-bom": b"\xef\xbb\xbf" + text.encode(),
        f"{name}-bom-crlf": b"\xef\xbb\xbf" + joined(["\r\n"] * count),
        f"{name}-bom-cr": b"\xef\xbb\xbf" + joined(["\r"] * count),
        f"{name}-no-final-newline": text.rstrip("\n").encode(),
        f"{name}-form-feeds": text.replace("\n\n\n", "\n\x0c\n\n").encode(),
        f"{name}-trailing-whitespace": "\n".join(line + " \t" if line.strip() else line for line in lines).encode(),
        f"{name}-cr-in-comments": text.replace("\n# ", "\n# one\rtwo ").encode(),
    }


def _suppression_cases() -> list[Case]:
    """Directives and lone carriage returns: a directive silences its own line, Python's lines."""
    silenced = TRAIN.replace("torch.cuda.synchronize()\n", "torch.cuda.synchronize()  # verify-perf: ignore[VP203]\n")
    below = TRAIN + "        pass  # verify-perf: ignore[VP203]\n"
    above = TRAIN.replace("        torch.cuda.synchronize()\n", "        # noqa: VP203\n        torch.cuda.synchronize()\n")
    cases = []
    for label, text in {"silenced": silenced, "directive-below": below, "directive-above": above}.items():
        variants = {
            f"{label}-cr": text.replace("\n", "\r"),
            f"{label}-crlf": text.replace("\n", "\r\n"),
            f"{label}-stray-cr-before": text.replace("import torch\n", "import torch  # a\rb\n", 1),
            f"{label}-stray-cr-in-string": text.replace("import torch\n", "import torch\nS = '''a\rb'''\n", 1),
        }
        for name, variant in variants.items():
            reference = files({"train.py": variant.replace("\r\n", "\n").replace("\r", "\n")})
            cases.append(Case(CATEGORY, f"suppression:{name}", files({"train.py": variant}), ("train.py", *JSON),
                              0 if label == "silenced" else 1, outputs=CACHED, reference=reference,
                              fast=name in ("silenced-cr", "directive-below-stray-cr-before")))
    return cases


def cases() -> list[Case]:
    rng = random.Random(f"{CATEGORY}-1")
    built = _cookie_cases() + _undecodable(rng)
    sources = {"train": TRAIN, "bad_train": BAD_TRAIN}
    sources.update({path.stem: path.read_text(encoding="utf-8") for path in CORPUS[:4]})
    for stem, text in sources.items():
        for name, data in _line_end_variants(stem, text, rng).items():
            built.append(replace(_judged(f"line-ends:{name}", data), fast=name in ("train-cr", "bad_train-bom-crlf")))
    return built + _suppression_cases()
