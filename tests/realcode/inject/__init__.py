"""Injection recall on real code (issue 23, item 1).

Per-step costs ("probes": `.item()`, `torch.cuda.synchronize()`, a subprocess, a history of
graph-carrying losses ...) are inserted right after the backward of real training loops,
each reached through one of fifteen path kinds (inline, a helper in another module, methods,
callbacks, `functools.partial`, lambdas, decorators, context managers, aliases, `getattr`).
verify-perf runs on each copy through its command line; a probe is found when its line gets a
finding of its rule at step heat. Loops are located with libcst, never by asking verify-perf.

Modules: `finder` (training loops), `targets` (which loop per repository), `probes`,
`path_kinds` (the code generators), `edits` (line insertion with a manifest), `training_file`
(imports and aliases), `workspace` (export and copies), `runner`, `scoring`, `report`.
Run: `python -m tests.realcode.inject --mirrors ../.mirror --verifier-cmd "python -m verifier"`.
"""
