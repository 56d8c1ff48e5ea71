"""Environment variables: VERIFY_PERF_JOBS and SOURCE_DATE_EPOCH that are not plain numbers in
range (superscripts, other scripts' digits, 5,000 digits, signs, spaces, hex, floats), cache and
key locations aimed at odd places, a home that is missing, colour and terminal settings, locales
and encodings that cannot show the file names, and Python settings a user may have exported. A
value verify-perf cannot use is exit 2 naming the variable; anything else leaves the result as
it is (the blocking code blocks, JSON stays JSON)."""

from __future__ import annotations

from tests.hostile.case import CACHED, KEY, Case
from tests.hostile.sources import TRAIN
from tests.hostile.trees import JSON, files

CATEGORY = "environment"
NUMBERS_REFUSED = ["0", "-1", "+2", "²", "٣", "３", " 2", "2 ", "0x2", "1e3", "2.0", "9" * 5000, "nan", "inf", "two",
                   "2\n", "\u00a02", "1_000"]
JOBS_REFUSED = NUMBERS_REFUSED + ["257", "99999999999999999999"]
EPOCH_REFUSED = ["-1", "+5", "²", "٣", "1.5", "9" * 5000, "253402300800", " 5", "0x10", "1e9", "now"]


def _blocks(name: str, env: dict, *, extra: tuple[str, ...] = (), outputs=CACHED, fast: bool = False,
            stderr: str = "") -> Case:
    return Case(CATEGORY, name, files({"train.py": TRAIN}), ("train.py", *JSON, *extra), 1, env=env, outputs=outputs,
                must_find=(("train.py", "VP203"),), stderr=stderr, fast=fast)


def _refused(name: str, env: dict, variable: str, *, extra: tuple[str, ...] = (), fast: bool = False) -> Case:
    return Case(CATEGORY, name, files({"train.py": TRAIN}), ("train.py", *JSON, *extra), 2, env=env,
                stderr=variable, fast=fast)


def cases() -> list[Case]:
    built = []
    for value in JOBS_REFUSED:
        built.append(_refused(f"jobs={value[:24]!r}", {"VERIFY_PERF_JOBS": value}, "VERIFY_PERF_JOBS",
                              fast=value in ("²", "9" * 5000)))
    for value in ("1", "2", "256", "007"):
        built.append(_blocks(f"jobs-valid={value}", {"VERIFY_PERF_JOBS": value}))
    built.append(_blocks("jobs-empty", {"VERIFY_PERF_JOBS": ""}))
    built.append(_blocks("jobs-refused-but-option-given", {"VERIFY_PERF_JOBS": "²"}, extra=("-j", "1")))
    for value in EPOCH_REFUSED:
        # The date only appears in the report: a run that writes one reads it.
        built.append(Case(CATEGORY, f"source-date-epoch={value[:24]!r}", files({"train.py": TRAIN}), ("train.py",), 2,
                          env={"SOURCE_DATE_EPOCH": value}, stderr="SOURCE_DATE_EPOCH", fast=value == "9" * 5000))
    for value in ("0", "253402300799", "1700000000"):
        built.append(Case(CATEGORY, f"source-date-epoch-valid={value}", files({"train.py": TRAIN}), ("train.py",), 1,
                          env={"SOURCE_DATE_EPOCH": value}, outputs=CACHED + ("reports/*",)))
    places = {
        "cache-dir-empty": ({"VERIFY_PERF_CACHE_DIR": ""}, CACHED),
        "cache-dir-relative-new": ({"VERIFY_PERF_CACHE_DIR": "sub/cache"}, KEY + ("sub/*",)),
        "key-file-new-folder": ({"VERIFY_PERF_CACHE_KEY_FILE": "@ROOT@/keys/deep/key"}, (".verify_perf_cache/*", "/keys/*")),
        "xdg-relative": ({"XDG_CACHE_HOME": "relative/cache"}, CACHED),
        "xdg-missing-folder": ({"XDG_CACHE_HOME": "@ROOT@/xdg/cache"}, (".verify_perf_cache/*", "/xdg/*")),
        "no-color": ({"NO_COLOR": "1"}, CACHED),
        "force-color": ({"FORCE_COLOR": "1", "CLICOLOR_FORCE": "1", "TERM": "xterm-256color"}, CACHED),
        "term-dumb": ({"TERM": "dumb", "COLUMNS": "0", "LINES": "-5"}, CACHED),
        "columns-huge": ({"COLUMNS": "9" * 5000}, CACHED),
        "ci-github": ({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": "@HOME@"}, CACHED),
        "locale-c": ({"LANG": "C", "LC_ALL": "C"}, CACHED),
        "locale-missing": ({"LANG": "xx_XX.NOPE", "LC_ALL": "xx_XX.NOPE"}, CACHED),
        "python-io-ascii": ({"PYTHONIOENCODING": "ascii"}, CACHED),
        "python-io-latin-1": ({"PYTHONIOENCODING": "latin-1:strict"}, CACHED),
        "python-utf8-off": ({"PYTHONUTF8": "0", "LC_ALL": "C"}, CACHED),
        "python-warnings-error": ({"PYTHONWARNINGS": "error"}, CACHED),
        "python-hash-seed": ({"PYTHONHASHSEED": "12345"}, CACHED),
        "python-dont-write-bytecode": ({"PYTHONDONTWRITEBYTECODE": "1"}, CACHED),
        "python-optimize": ({"PYTHONOPTIMIZE": "2"}, CACHED),
        "python-safe-path": ({"PYTHONSAFEPATH": "1"}, CACHED),
        "python-dev-mode": ({"PYTHONDEVMODE": "1"}, CACHED),
        "python-no-user-site": ({"PYTHONNOUSERSITE": "1"}, CACHED),
        "python-recursion": ({"PYTHONINTMAXSTRDIGITS": "640"}, CACHED),
        "tmpdir-missing": ({"TMPDIR": "@ROOT@/no-such-tmp"}, CACHED),
        "tmpdir-file": ({"TMPDIR": "@HOME@/.bashrc"}, CACHED),
        "home-missing": ({"HOME": "@ROOT@/no-home"}, (".verify_perf_cache/*", "/no-home/*")),
        "git-dir-bogus": ({"GIT_DIR": "@ROOT@/nowhere"}, CACHED),
        "git-ceiling-empty": ({"GIT_CEILING_DIRECTORIES": ""}, CACHED),
        "debug-set": ({"VERIFY_PERF_DEBUG": "1"}, CACHED),
    }
    for name, (env, outputs) in places.items():
        built.append(_blocks(f"setting:{name}", env, outputs=outputs,
                             fast=name in ("force-color", "python-io-ascii", "home-missing")))
    unicode_name = files({"训练 é.py": TRAIN, "caf\udce9.py": TRAIN})
    for name, env in {"ascii-names": {"PYTHONIOENCODING": "ascii"}, "c-locale-names": {"LANG": "C", "LC_ALL": "C"},
                      "latin-1-names": {"PYTHONIOENCODING": "latin-1"}}.items():
        for output in ("text", "json", "github"):
            built.append(Case(CATEGORY, f"{name}:{output}", unicode_name, (".", "--format", output, "--no-report"), 1,
                              env=env, outputs=CACHED))
    for name, argv in {"rules": ("rule", "--all"), "rules-json": ("rule", "--all", "--format", "json"),
                       "show-files": (".", "--show-files"), "show-settings": (".", "--show-settings")}.items():
        built.append(Case(CATEGORY, f"ascii-terminal:{name}", unicode_name, argv, 0, env={"PYTHONIOENCODING": "ascii"}))
    return built
