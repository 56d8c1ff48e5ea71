"""Fuzzing-style mutations of real training code: the corpus samples and both examples, each
mutated by seeded random edits (bytes flipped, inserted or deleted; lines duplicated, dropped,
swapped, indented; carriage returns, null bytes, BOMs, brackets, quotes, backslashes and Unicode
separators inserted; the file cut short). The mutant sits beside the blocking train.py: the run
still blocks, and a mutant Python's parser refuses is a VP900. Edits that keep the meaning
(comments and blank lines added at the end, trailing whitespace, CRLF line ends) must keep the
findings exactly."""

from __future__ import annotations

import random

from tests.hostile.case import CACHED, Case
from tests.hostile.sources import TRAIN, corpus, python_rejects
from tests.hostile.trees import JSON, files

CATEGORY = "mutations"
MUTANTS_PER_FILE = 3
INSERTS = [b"\r", b"\r\n", b"\x00", b"\xff", b"\xe9", b"\xef\xbb\xbf", b"\x0c", b"\t", b"(", b")", b"[", b"]", b"{",
           b":", b"'", b'"""', b"\\", b"\\\n", b"\n    ", b"#", b"\xe2\x80\xa8", b"\xf0\x9f\x94\xa5", b" if ", b"lambda:",
           b"async ", b"await ", b"yield ", b"*", b"@", b"\x1b[2J"]


def _mutate(data: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    source, done = bytearray(data), []
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(["flip", "insert", "delete", "duplicate-line", "drop-line", "swap-lines", "indent",
                             "dedent", "truncate"])
        lines = bytes(source).split(b"\n")
        at = rng.randrange(max(len(source), 1))
        if action == "flip" and source:
            source[at] ^= 1 << rng.randrange(8)
        elif action == "insert":
            source[at:at] = rng.choice(INSERTS)
        elif action == "delete":
            del source[at : at + rng.randint(1, 16)]
        elif action in ("duplicate-line", "drop-line", "swap-lines", "indent", "dedent") and len(lines) > 2:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if action == "duplicate-line":
                lines.insert(i, lines[i])
            elif action == "drop-line":
                del lines[i]
            elif action == "swap-lines":
                lines[i], lines[j] = lines[j], lines[i]
            elif action == "indent":
                lines[i] = b"    " + lines[i]
            else:
                lines[i] = lines[i][4:] if lines[i].startswith(b"    ") else lines[i]
            source = bytearray(b"\n".join(lines))
        elif action == "truncate":
            del source[at:]
        done.append(action)
    return bytes(source), done


def _judged(name: str, mutant: bytes, *, fast: bool = False) -> Case:
    rejected = python_rejects(mutant)
    return Case(CATEGORY, name, files({"train.py": TRAIN, "mutant.py": mutant}), (".", *JSON, "--file-timeout", "20"),
                1, outputs=CACHED, must_find=(("train.py", "VP203"),), unanalysable=("mutant.py",) if rejected else (),
                limit=90, fast=fast)


def _preserving(name: str, data: bytes, *, fast: bool = False) -> list[Case]:
    text = data.decode("utf-8")
    variants = {
        "comment-at-end": text + "\n# a closing remark\n\n\n",
        "trailing-whitespace": "\n".join(line + "  " if line.strip() else line for line in text.split("\n")),
        "crlf": text.replace("\n", "\r\n"),
    }
    reference = files({"sample.py": data})
    cases = []
    for label, variant in variants.items():
        if label == "trailing-whitespace" and ('"""' in text or "'''" in text):
            continue  # trailing spaces inside a multi-line string change the program's data, not only its layout
        cases.append(Case(CATEGORY, f"preserving:{name}:{label}", files({"sample.py": variant}), (".", *JSON), None,
                          outputs=CACHED, reference=reference, limit=90, fast=fast and label == "crlf"))
    return cases


def cases() -> list[Case]:
    rng = random.Random(f"{CATEGORY}-1")
    built = []
    for index, (name, data) in enumerate(corpus()):
        for number in range(MUTANTS_PER_FILE):
            mutant, actions = _mutate(data, rng)
            built.append(_judged(f"{name}:{number}:{'+'.join(actions)}", mutant, fast=index < 2 and number == 0))
        built += _preserving(name, data, fast=index == 0)
    return built
