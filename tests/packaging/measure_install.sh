#!/usr/bin/env bash
# Sizes and times of verify-perf as users install it, for docs/install.md and docs/pre-commit.md and before/after notes:
#   tests/packaging/measure_install.sh REPO [WORKDIR]
# REPO is a git clone (its HEAD is measured); needs `build` and `pre-commit` on the current python.
# Prints the base venv size (du -sm) and install time, the [dynamic] venv (when the extra exists),
# and the pre-commit hook environment size and first-run time on a two-file project, then the
# hook's result once a per-step sync is staged in the helper (expected: Failed, VP203 HIGH).
set -euo pipefail
repo=$(cd "$1" && pwd); work=${2:-$(mktemp -d)}; python=${PYTHON:-python3}
seconds() { local start=$1; echo "$(date +%s.%N) - $start" | bc; }
mkdir -p "$work" && cd "$repo"
"$python" -m build -q --wheel --outdir "$work/dist" . >/dev/null 2>&1
wheel=$(ls "$work"/dist/*.whl)
"$python" -m venv "$work/base"
start=$(date +%s.%N); "$work/base/bin/pip" install -q -c "$repo/constraints.txt" "$wheel" 2>/dev/null
echo "base venv: $(du -sm "$work/base" | cut -f1) MiB, install $(seconds "$start") s," \
     "torch installed: $("$work/base/bin/python" -c 'import importlib.util as u; print(u.find_spec("torch") is not None)')"
if "$python" -c "import sys, tomllib; sys.exit('dynamic' not in tomllib.load(open('pyproject.toml', 'rb'))['project'].get('optional-dependencies', {}))"; then
  "$python" -m venv "$work/dynamic"
  start=$(date +%s.%N); "$work/dynamic/bin/pip" install -q -c "$repo/constraints.txt" "$wheel[dynamic]" 2>/dev/null
  echo "dynamic venv: $(du -sm "$work/dynamic" | cut -f1) MiB, install $(seconds "$start") s"
fi
project="$work/project"; mkdir -p "$project" && cd "$project" && git init -q -b main
printf 'import torch\nfrom helper import log_step\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n        loss = model(x, y)\n        loss.backward()\n        optimizer.step()\n        log_step(loss)\n' > train.py
printf 'def log_step(loss):\n    return loss\n' > helper.py
printf 'repos:\n- repo: %s\n  rev: %s\n  hooks:\n  - id: verify-perf\n' "$repo" "$(git -C "$repo" rev-parse HEAD)" > .pre-commit-config.yaml
git add . && git -c user.name=m -c user.email=m@example.com commit -qm base
export PRE_COMMIT_HOME="$work/pre-commit" PIP_CONSTRAINT="$repo/constraints.txt"
start=$(date +%s.%N); status=0; "$python" -m pre_commit run --all-files > "$work/first-run.log" 2>&1 || status=$?
echo "pre-commit first run: exit $status, $(seconds "$start") s, environment $(du -sm "$PRE_COMMIT_HOME" | cut -f1) MiB"
printf 'import torch\n\n\ndef log_step(loss):\n    torch.cuda.synchronize()\n    return loss\n' > helper.py
git add helper.py
status=0; "$python" -m pre_commit run > "$work/staged.log" 2>&1 || status=$?
echo "pre-commit on the staged helper: exit $status"; cat "$work/staged.log"
