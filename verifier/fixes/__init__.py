"""`--fix`: applying the fixes rules offer with their findings, as ruff does.

The engine attaches each offered fix to its finding as data (`verifier.findings.Autofix`). Here:
which fixes a run may apply (`policy`), which of them to apply together (`plan`), applying them
to a file in one libcst pass (`apply`), checking the result by analysing it again before any file
is touched (`session`), and replacing each file atomically (`write`).
"""
