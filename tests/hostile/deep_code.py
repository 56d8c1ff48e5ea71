"""Deep and huge code: long attribute, subscript and call chains, deep nesting of every kind,
long operator chains, many helpers forwarding a value, huge files and lines. Each construct sits
either beside the blocking train.py (in deep.py: train.py's finding must survive whatever deep.py
does to the project pass) or inside train.py itself (the run must still block: with its
findings, or with a blocking VP900 for what it could not finish). Bounded by --file-timeout."""

from __future__ import annotations

from collections.abc import Callable

from tests.hostile.case import CACHED, Case
from tests.hostile.sources import TRAIN, python_rejects
from tests.hostile.trees import JSON, files

CATEGORY = "deep-code"
LIMITS = ("--file-timeout", "20")


def _chain(head: str, link: str) -> Callable[[int], str]:
    return lambda n: f"X = {head}{link * n}\n"


def _nested(opening: str, closing: str, middle: str = "x") -> Callable[[int], str]:
    return lambda n: f"X = {opening * n}{middle}{closing * n}\n"


def _indented(header: str, body: str) -> Callable[[int], str]:
    def build(n: int) -> str:
        lines = [" " * (4 * i) + header.format(i=i) for i in range(n)]
        return "\n".join(lines) + "\n" + " " * (4 * n) + body + "\n"

    return build


def _helpers(n: int) -> str:
    """n helpers each forwarding the loss to the next; the last one synchronizes."""
    parts = [f"def helper_{i}(value):\n    return helper_{i + 1}(value)\n\n" for i in range(n)]
    parts.append(f"def helper_{n}(value):\n    torch.cuda.synchronize()\n    return value\n\n")
    loop = ("def fit(model, loader, optimizer):\n    for x, y in loader:\n        loss = model(x, y)\n"
            "        loss.backward()\n        optimizer.step()\n        helper_0(loss)\n")
    return "import torch\n\n" + "".join(parts) + loop


def _aliases(n: int) -> str:
    lines = ["import torch\n", "def fit(model, loader, optimizer):\n", "    for x, y in loader:\n",
             "        loss = model(x, y)\n        loss.backward()\n        optimizer.step()\n        v0 = loss\n"]
    lines += [f"        v{i + 1} = v{i}\n" for i in range(n)]
    lines.append(f"        print(v{n}.item())\n")
    return "".join(lines)


def _classes(n: int) -> str:
    base = ("import torch\n\n\nclass C0(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.device = torch.device('cuda')\n\n")
    parts = [base]
    parts += [f"class C{i + 1}(C{i}):\n    pass\n\n" for i in range(n)]
    return "".join(parts)


def _modules(n: int) -> dict[str, str]:
    """n modules, each calling the next; the last synchronizes; train.py's loop calls the first."""
    tree = {f"pkg/m{i}.py": f"from pkg.m{i + 1} import step_{i + 1}\n\n\ndef step_{i}(x):\n    return step_{i + 1}(x)\n"
            for i in range(n)}
    tree[f"pkg/m{n}.py"] = f"import torch\n\n\ndef step_{n}(x):\n    torch.cuda.synchronize()\n    return x\n"
    tree["pkg/__init__.py"] = ""
    return tree


CONSTRUCTS: dict[str, tuple[Callable[[int], str], tuple[int, ...]]] = {
    "attribute-chain": (_chain("torch", ".cuda"), (500, 5000, 20000)),
    "subscript-chain": (_chain("x", "[0]"), (500, 2000)),
    "call-chain": (_chain("f", "()"), (500, 2000)),
    "method-chain": (_chain("torch.zeros(1)", ".cuda()"), (500, 3000)),
    "parentheses": (_nested("(", ")"), (150, 199, 200, 1500)),
    "lists": (_nested("[", "]"), (199, 250)),
    "dicts": (_nested("{'k': ", "}", "1"), (150, 250)),
    "calls-nested": (_nested("f(", ")"), (150, 250)),
    "unary-minus": (lambda n: "X = " + "-" * n + "x\n", (1000, 20000)),
    "not-chain": (lambda n: "X = " + "not " * n + "x\n", (1000, 5000)),
    "plus-chain": (lambda n: "X = " + " + ".join(["x"] * n) + "\n", (300, 1000)),
    "and-chain": (lambda n: "X = " + " and ".join(["x"] * n) + "\n", (500, 10_000)),
    "comparison-chain": (lambda n: "X = " + " < ".join(["x"] * n) + "\n", (500, 2000)),
    "string-concatenation": (lambda n: "X = " + " ".join(["'a'"] * n) + "\n", (10_000,)),
    "lambda-nesting": (lambda n: "X = " + "lambda: " * n + "0\n", (100, 500)),
    "comprehension-nesting": (lambda n: "X = " + "[" * n + "0" + " for _ in y]" * n + "\n", (50, 150)),
    "function-nesting": (_indented("def f{i}():", "torch.cuda.synchronize()"), (50, 99, 100)),
    "if-nesting": (_indented("if x{i}:", "pass"), (99, 101)),
    "for-nesting": (_indented("for i{i} in loader:", "print(x.item())"), (40, 99)),
    "class-nesting": (_indented("class K{i}:", "pass"), (60,)),
    "with-nesting": (_indented("with ctx{i}:", "pass"), (99,)),
    "elif-chain": (lambda n: "if x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, n)), (500, 3000)),
    "decorators": (lambda n: "".join("@d\n" for _ in range(n)) + "def f():\n    pass\n", (1000, 10_000)),
    "parameters": (lambda n: "def f(" + ", ".join(f"p{i}" for i in range(n)) + "):\n    pass\n", (5000,)),
    "arguments": (lambda n: "f(" + ", ".join(f"a{i}" for i in range(n)) + ")\n", (20_000,)),
    "tuple-target": (lambda n: "(" * n + "a," + ")" * n + " = x\n", (150,)),
    "dotted-import": (lambda n: "import " + ".".join(f"m{i}" for i in range(n)) + "\n", (2000,)),
    "global-names": (lambda n: "def f():\n    global " + ", ".join(f"g{i}" for i in range(n)) + "\n", (10_000,)),
    "match-cases": (lambda n: "match x:\n" + "".join(f"    case {i}:\n        pass\n" for i in range(n)), (2000,)),
    "many-functions": (lambda n: "".join(f"def f{i}(x):\n    return x\n" for i in range(n)), (10_000,)),
    "many-findings": (lambda n: "for x in loader:\n    optimizer.step()\n" + "    x.item()\n" * n, (5000,)),
    "long-line-string": (lambda n: "X = '" + "a" * n + "'\n", (2_000_000,)),
    "long-identifier": (lambda n: "x" * n + " = 1\n", (200_000,)),
    "self-recursion": (lambda n: "def f(x):\n    return f(x)\n" * n, (1,)),
    "helpers-forwarding": (_helpers, (400, 1500)),
    "alias-chain": (_aliases, (3000,)),
    "class-hierarchy": (_classes, (600,)),
}


def _case(name: str, size: int, where: str, code: str) -> Case:
    if where == "beside":
        tree = {"train.py": TRAIN, "deep.py": "import torch\n" + code}
        must = (("train.py", "VP203"),)
    else:
        tree = {"train.py": TRAIN + "\n\n" + code}
        must = ()
    # A module Python's parser refuses is an INFO VP900 (Python could not run it either); one it
    # accepts must block, with its finding or a blocking VP900 for what could not be finished.
    rejected = where == "inside" and python_rejects(tree["train.py"])
    return Case(CATEGORY, f"{name}-{size}-{where}", files(tree), (".", *JSON, *LIMITS), 0 if rejected else 1,
                outputs=CACHED, must_find=must, unanalysable=("train.py",) if rejected else (), limit=90, fast=(name, size) in {("attribute-chain", 500), ("helpers-forwarding", 400)})


def cases() -> list[Case]:
    built = []
    for name, (make, sizes) in CONSTRUCTS.items():
        for index, size in enumerate(sizes):
            code = make(size)
            for where in ("beside", "inside") if index == 0 else ("beside" if size % 2 else "inside",):
                built.append(_case(name, size, where, code))
    for size in (50, 300):
        tree = {"train.py": TRAIN.replace("torch.cuda.synchronize()", "from pkg.m0 import step_0\n        step_0(loss)"),
                **_modules(size)}
        built.append(Case(CATEGORY, f"module-chain-{size}", files(tree), (".", *JSON, *LIMITS), 1, outputs=CACHED,
                          limit=120))
    many = {f"many/f{i}.py": f"import torch\n\ndef f{i}(x):\n    return x.sum()\n" for i in range(400)}
    built.append(Case(CATEGORY, "four-hundred-files", files({**many, "train.py": TRAIN}), (".", *JSON), 1,
                      outputs=CACHED, must_find=(("train.py", "VP203"),), limit=120))
    size_limit = ("--max-file-size", "1KiB")
    built.append(Case(CATEGORY, "over-max-file-size", files({"train.py": TRAIN + "#" * 2000 + "\n"}),
                      ("train.py", *JSON, *size_limit), 1, outputs=CACHED, unanalysable=("train.py",)))
    built.append(Case(CATEGORY, "at-max-file-size", files({"train.py": TRAIN + "#" * (1024 - len(TRAIN) - 1) + "\n"}),
                      ("train.py", *JSON, *size_limit), 1, outputs=CACHED, must_find=(("train.py", "VP203"),)))
    built.append(Case(CATEGORY, "whole-run-bound", files({f"deep{i}.py": "import torch\nX = torch" + ".cuda" * 20000 + "\n"
                                                          for i in range(4)} | {"train.py": TRAIN}),
                      (".", *JSON, "--run-timeout", "3", "-j", "1"), 1, outputs=CACHED, limit=60))
    return built
