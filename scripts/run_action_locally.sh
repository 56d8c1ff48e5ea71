#!/usr/bin/env bash
# Runs the GitHub Action (action.yml) on this machine, end to end, on a pull request made up for it.
#
# It builds a scratch git repository with a bare "origin": main holds a small training loop, and a
# pull-request branch adds `torch.cuda.synchronize()` to every step. Like GitHub, it checks out the
# merge of that branch into main and sets GITHUB_EVENT_NAME, GITHUB_BASE_REF and GITHUB_REF; then
# scripts/run_action_steps.py runs every step of action.yml there: install verify-perf (from this
# checkout, into a fresh venv), find the merge base, run the gate (annotations, report, SARIF),
# write the job summary, and enforce the decision. The SARIF upload needs GitHub and is shown, not run.
#
# Usage: scripts/run_action_locally.sh [--input NAME=VALUE ...]
#   e.g. --input install=false   use the verify-perf already on PATH instead of installing one
#        --input sarif=false     no SARIF
# Environment: PYTHON, a Python with PyYAML for the step runner (default: .venv/bin/python, else
# python3); TMPDIR, where the scratch folder goes (it is kept, and its path printed).
# Exit status: the action's, so 1 here (BLOCK: the per-step synchronize is a HIGH VP203 finding).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$root/.venv/bin/python" ]; then PYTHON="$root/.venv/bin/python"; else PYTHON=python3; fi
fi
"$PYTHON" -c "import yaml" 2>/dev/null || {
    echo "run_action_locally.sh: $PYTHON has no PyYAML (pip install pyyaml, or set PYTHON)" >&2
    exit 2
}

scratch="$(mktemp -d "${TMPDIR:-/tmp}/verify-perf-action.XXXXXX")"
origin="$scratch/origin.git"
work="$scratch/work"
git_() { git -c user.name=verify-perf -c user.email=verify-perf@example.com -c commit.gpgsign=false "$@"; }

git init --quiet --bare --initial-branch=main "$origin"
git init --quiet --initial-branch=main "$work"
cd "$work"
git remote add origin "$origin"
mkdir -p src
cat > src/train.py <<'PY'
import torch


def train(model, loader, optimizer, device):
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
PY
git_ add src/train.py
git_ commit --quiet -m "A training loop"
git_ push --quiet origin main

git_ checkout --quiet -b wait-for-the-device
cat >> src/train.py <<'PY'
        torch.cuda.synchronize()
PY
git_ commit --quiet -am "Wait for the device after every step"
git_ push --quiet origin wait-for-the-device

# What actions/checkout checks out for a pull request: the merge of its branch into the base.
git_ fetch --quiet origin
git_ checkout --quiet --detach origin/main
git_ merge --quiet --no-ff --no-edit wait-for-the-device

export GITHUB_EVENT_NAME=pull_request GITHUB_BASE_REF=main GITHUB_HEAD_REF=wait-for-the-device
export GITHUB_REF=refs/pull/1/merge RUNNER_TEMP="$scratch/runner-temp"
echo "scratch repository: $work (pull request: main <- wait-for-the-device)"

set +e
"$PYTHON" "$root/scripts/run_action_steps.py" "$root/action.yml" --outputs "$scratch/outputs" "$@"
status=$?
set -e
sarif="$(sed -n 's/^sarif-file=//p' "$scratch/outputs" 2>/dev/null || true)"
echo "SARIF: ${sarif:-(none written)}"
echo "action exit status: $status"
exit "$status"
