"""Run the steps of a composite GitHub Action (this repository's action.yml) on this machine.

A small part of what GitHub's runner does, enough to run verify-perf's action end to end without
GitHub: inputs (defaults, or `--input NAME=VALUE`), `${{ }}` expressions over `inputs`, `steps`,
`github`, `runner` and `env`, a step's `if` (with `success()`, `always()`, `failure()`), `env`,
`continue-on-error`, the files a step writes to (`GITHUB_OUTPUT`, `GITHUB_ENV`, `GITHUB_PATH`,
`GITHUB_STEP_SUMMARY`) and the action's `outputs`. A `uses:` step cannot run here: it is shown
with the inputs it would get, and counts as skipped. `run:` steps run with bash as GitHub runs
them (`bash --noprofile --norc -eo pipefail`), in the current directory (the workspace).

Usage: python scripts/run_action_steps.py action.yml [--input NAME=VALUE ...] [--outputs FILE]
Exit status: 0 when every step passed, else the exit status of the first step that failed.
scripts/run_action_locally.sh sets up a pull request to run it on.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
TOKEN = re.compile(r"\s*(?:(?P<number>\d+(?:\.\d+)?)|(?P<string>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|<=|>=|[!()<>.,\[\]])"
                   r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))")


class ActionError(Exception):
    """The action cannot be run here (not the action's own failure)."""


class ExpressionError(ActionError):
    pass


def tokens(text: str) -> list[tuple[str, str]]:
    found, position = [], 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = TOKEN.match(text, position)
        if match is None:
            raise ExpressionError(f"cannot read {text[position:]!r} in {text!r}")
        kind = match.lastgroup
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


class Evaluator:
    """GitHub's expression language, the part an action uses: literals, context properties,
    `!`, comparisons, `&&`, `||` and the status functions."""

    def __init__(self, contexts: dict, status: str):
        self.contexts = contexts
        self.status = status

    def evaluate(self, text: str):
        self.items, self.at = tokens(text), 0
        value = self.either()
        if self.at != len(self.items):
            raise ExpressionError(f"unexpected {self.items[self.at][1]!r} in {text!r}")
        return value

    def peek(self) -> str | None:
        return self.items[self.at][1] if self.at < len(self.items) else None

    def take(self) -> tuple[str, str]:
        item = self.items[self.at]
        self.at += 1
        return item

    def either(self):
        value = self.both()
        while self.peek() == "||":
            self.take()
            right = self.both()
            value = value if truthy(value) else right
        return value

    def both(self):
        value = self.comparison()
        while self.peek() == "&&":
            self.take()
            right = self.comparison()
            value = right if truthy(value) else value
        return value

    def comparison(self):
        value = self.unary()
        while self.peek() in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            value = compare(op, value, self.unary())
        return value

    def unary(self):
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if text == "(":
            value = self.either()
            self.expect(")")
            return value
        if kind == "number":
            return float(text) if "." in text else int(text)
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r}")
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self.peek() == "(":
            self.take()
            value = self.call(text)
            self.expect(")")
            return value
        value = self.contexts.get(text)
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                key = self.take()[1]
            else:
                key = str(self.either())
                self.expect("]")
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def expect(self, text: str) -> None:
        if self.peek() != text:
            raise ExpressionError(f"expected {text!r}, found {self.peek()!r}")
        self.take()

    def call(self, name: str):
        statuses = {"success": self.status == "success", "failure": self.status == "failure",
                    "always": True, "cancelled": False}
        if name not in statuses:
            raise ExpressionError(f"{name}() is not supported here")
        return statuses[name]


def truthy(value) -> bool:
    return value not in (None, False, 0, "")


def compare(op: str, left, right) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        left, right = left.casefold(), right.casefold()
    elif left is None or right is None:
        left, right = ("" if left is None else left), ("" if right is None else right)
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    try:
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    except TypeError:
        return False


def as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def interpolate(text, evaluator: Evaluator) -> str:
    return EXPRESSION.sub(lambda m: as_text(evaluator.evaluate(m.group(1))), as_text(text))


def condition(text, evaluator: Evaluator) -> bool:
    if text is None:
        return evaluator.status == "success"
    text = as_text(text).strip()
    match = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.DOTALL)
    expression = match.group(1) if match else text
    # As on GitHub, a condition without a status function runs only while every step succeeded.
    if not re.search(r"\b(success|failure|always|cancelled)\s*\(", expression):
        expression = f"success() && ({expression})"
    return truthy(evaluator.evaluate(expression))


def read_outputs(path: Path) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` blocks, as GitHub reads GITHUB_OUTPUT and GITHUB_ENV."""
    values, lines = {}, path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            while index < len(lines) and lines[index] != delimiter:
                block.append(lines[index])
                index += 1
            index += 1
            values[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def run(action_file: Path, overrides: dict[str, str], outputs_file: Path | None) -> int:
    action = yaml.safe_load(action_file.read_text(encoding="utf-8"))
    if action.get("runs", {}).get("using") != "composite":
        raise ActionError(f"{action_file}: not a composite action")
    unknown = set(overrides) - set(action.get("inputs", {}))
    if unknown:
        raise ActionError(f"{action_file}: no input named {', '.join(sorted(unknown))}")
    inputs = {name: as_text(spec.get("default", "")) for name, spec in action.get("inputs", {}).items()}
    inputs.update(overrides)

    runner_temp = Path(os.environ.get("RUNNER_TEMP") or tempfile.mkdtemp(prefix="runner-temp."))
    runner_temp.mkdir(parents=True, exist_ok=True)
    files = runner_temp / "_runner_files"
    files.mkdir(exist_ok=True)
    summary, path_file = files / "step_summary.md", files / "path"
    summary.touch()
    base_env = dict(os.environ)
    base_env.update({
        "GITHUB_ACTIONS": "true", "CI": "true", "RUNNER_TEMP": str(runner_temp),
        "GITHUB_ACTION_PATH": str(action_file.resolve().parent), "GITHUB_WORKSPACE": os.getcwd(),
        "GITHUB_STEP_SUMMARY": str(summary),
    })
    github = {"action_path": base_env["GITHUB_ACTION_PATH"], "workspace": base_env["GITHUB_WORKSPACE"],
              "event_name": base_env.get("GITHUB_EVENT_NAME", ""), "base_ref": base_env.get("GITHUB_BASE_REF", ""),
              "head_ref": base_env.get("GITHUB_HEAD_REF", ""), "ref": base_env.get("GITHUB_REF", "")}
    steps: dict[str, dict] = {}
    contexts = {"inputs": inputs, "steps": steps, "github": github, "runner": {"temp": str(runner_temp)},
                "env": base_env}
    status, first_failure = "success", 0
    added_path: list[str] = []

    for number, step in enumerate(action["runs"]["steps"], start=1):
        evaluator = Evaluator(contexts, status)
        name = step.get("name") or step.get("run", step.get("uses", f"step {number}")).splitlines()[0]
        print(f"::group::[{number}] {name}", flush=True)
        if not condition(step.get("if"), evaluator):
            print(f"skipped: `if: {as_text(step.get('if'))}` is false", flush=True)
            outcome, outputs = "skipped", {}
        elif "uses" in step:
            given = {key: interpolate(value, evaluator) for key, value in (step.get("with") or {}).items()}
            print(f"skipped locally: would run {step['uses']} with {given}", flush=True)
            outcome, outputs = "skipped", {}
        else:
            env = dict(base_env)
            env["PATH"] = os.pathsep.join([*reversed(added_path), base_env.get("PATH", "")])
            env.update({key: interpolate(value, evaluator) for key, value in (step.get("env") or {}).items()})
            output_file, env_file = files / f"output_{number}", files / f"env_{number}"
            output_file.write_text(""), env_file.write_text(""), path_file.write_text("")
            env.update({"GITHUB_OUTPUT": str(output_file), "GITHUB_ENV": str(env_file), "GITHUB_PATH": str(path_file)})
            script = files / f"step_{number}.sh"
            script.write_text(interpolate(step["run"], evaluator), encoding="utf-8")
            if step.get("shell") != "bash":
                raise ActionError(f"{action_file}: step {number}: only `shell: bash` runs here")
            code = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                                  env=env, cwd=step.get("working-directory") or None).returncode
            outputs = read_outputs(output_file)
            base_env.update(read_outputs(env_file))
            added_path += [line for line in path_file.read_text(encoding="utf-8").splitlines() if line.strip()]
            outcome = "success" if code == 0 else "failure"
            if code != 0:
                print(f"step {number} failed with exit status {code}", flush=True)
        continue_on_error = interpolate(step.get("continue-on-error", False), evaluator) == "true"
        conclusion = "success" if outcome == "failure" and continue_on_error else outcome
        if conclusion == "failure":
            status = "failure"
            first_failure = first_failure or code
        print("::endgroup::", flush=True)
        if "id" in step:
            steps[step["id"]] = {"outputs": outputs, "outcome": outcome, "conclusion": conclusion}

    evaluator = Evaluator(contexts, status)
    results = {name: interpolate(spec.get("value", ""), evaluator) for name, spec in (action.get("outputs") or {}).items()}
    print("action outputs:")
    for name, value in results.items():
        print(f"  {name}: {value}")
    print(f"job summary: {summary}")
    if outputs_file is not None:
        outputs_file.write_text("".join(f"{k}={v}\n" for k, v in {**results, "job-summary": str(summary)}.items()))
    return first_failure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", type=Path, help="the action's metadata file (action.yml)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE", help="set one of the action's inputs")
    parser.add_argument("--outputs", type=Path, help="also write the action's outputs to FILE as NAME=VALUE lines")
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--input {item!r}: expected NAME=VALUE")
        overrides[name] = value
    try:
        return run(args.action, overrides, args.outputs)
    except (ActionError, OSError, yaml.YAMLError) as error:
        # Exit status 2, never 1: a step runner that cannot run is not a BLOCK.
        print(f"run_action_steps.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
