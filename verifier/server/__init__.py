"""`verify-perf server`: the findings in the editor, as a Language Server (LSP over stdio).

What the gate would say at merge time is shown where the code is written: each open Python file
is analysed as `verify-perf FILE` analyses it (the same configuration, rules, suppressions and
fix policy), its findings published as diagnostics with their heat trace and premises as related
information, and each fix a finding offers as a code action. `protocol` turns findings into LSP
objects; `analysis` runs the analysis on an editor's unsaved text; `language_server` wires both
into pygls (the `server` extra).
"""
