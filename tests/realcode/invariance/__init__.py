"""Refactoring invariance on real code (issue 23, item 2).

Each training loop of the injection table (`inject/targets.py`) is probed twice: known per-step
costs (`.item()` and `float()` of the loss, the loss appended to a list, `torch.cuda.synchronize()`)
are written right after the backward, and, in a second copy, right after the optimizer step.
libcst codemods then rewrite the probed file: renamings, the shapes a loss comes out of a model
in, extracting the step into a function, a module or a method, wrapping module-level code in
`main()`, a step timer, inlining a one-call helper (all of which keep behaviour), and guarding
the probes with `if step % 100 == 0:` or moving them after the loop (which must change their
findings). verify-perf runs on both sides of each pair; every finding of the touched files is
compared through the rewrite's line map.

Modules: `splice` (rebuild a tree keeping node identity, and the line map), `step` (the loop,
anchor, probes and loss as nodes), `dataflow` (what a moved range reads and writes), one module
per rewrite family (`renames`, `loss_shapes`, `extract`, `main_guard`, `timer`, `behaviour`),
`kinds`, `probed` (the original of every pair), `compare`, `runner`, `report`.
Run: `python -m tests.realcode.invariance --mirrors ../.mirror --verifier-cmd "python -m verifier"`.
"""
