"""The per-step costs the harness injects, and the rules that must report each one.

Each probe is written as statements reading a subject (the loss, or a parameter holding it)
and, where it has one, as a single expression (for the lambda path kind, whose body can only be
an expression). The accepted codes are the catalogue's: a read may come out as VP201 or, after
an earlier read of the same value, as VP202; a history of losses is VP402, or VP401 where the
catalogue calls it accumulation. Order matters inside one copy: host reads come first and the
explicit synchronisations last, so that no probe drains the queue ahead of a read it precedes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

READS = frozenset({"VP201", "VP202"})


@dataclass(frozen=True)
class Aliases:
    """The names a probe's code uses for modules and the module-level history list."""

    torch: str = "torch"
    numpy: str = "np"
    subprocess: str = "subprocess"
    functools: str = "functools"
    history: str = "_probe_history"


@dataclass(frozen=True)
class Probe:
    name: str
    rules: frozenset[str]
    statements: Callable[[str, Aliases], list[str]]
    expression: Callable[[str, Aliases], str] | None = None
    # The index, in `statements`, of the line whose finding counts.
    probe_index: int = 0
    needs: frozenset[str] = frozenset()


def _probe(name: str, rules: set[str], template: Callable[[str, Aliases], str], needs: set[str] = frozenset()) -> Probe:
    """A probe that is one expression statement."""
    return Probe(name, frozenset(rules), lambda s, n: [template(s, n)], template, needs=frozenset(needs))


PROBES: tuple[Probe, ...] = (
    _probe("item", READS, lambda s, n: f"{s}.item()"),
    _probe("float", READS, lambda s, n: f"float({s})"),
    Probe(
        "bool_if",
        READS,
        lambda s, n: [f"if bool({s} > 0):", "    pass"],
        lambda s, n: f"bool({s} > 0)",
    ),
    _probe("fstring_print", READS, lambda s, n: f'print(f"{{{s}}}")'),
    _probe("cpu_numpy", READS, lambda s, n: f"{s}.detach().cpu().numpy()"),
    _probe("tolist", READS, lambda s, n: f"{s}.detach().tolist()"),
    _probe("np_asarray", READS, lambda s, n: f"{n.numpy}.asarray({s}.detach())", {"numpy"}),
    _probe("nonzero", {"VP205"}, lambda s, n: f"({s} > 0).nonzero()"),
    _probe("bool_mask", {"VP205"}, lambda s, n: f"{s}.reshape(-1)[{s}.reshape(-1) > 0]"),
    _probe("host_tensor_to_device", {"VP104"}, lambda s, n: f"{n.torch}.zeros(4).to({s}.device)"),
    # The batching family: a model run on each row of a device tensor (batch-1 forwards).
    _probe("per_row_forward", {"VP101"}, lambda s, n: f"{n.torch}.stack([model(row) for row in {s}])"),
    _probe("history_append", {"VP402", "VP401"}, lambda s, n: f"{n.history}.append({s})", {"history"}),
    # Logging-only: the reduced copy is printed and used for nothing else. VP601 asks for a result
    # the host reads; a collective whose result nobody reads at all is not its pattern.
    Probe(
        "all_reduce_logging",
        {"VP601"},
        lambda s, n: [
            "probe_reduced = " + f"{s}.detach().clone()",
            f"{n.torch}.distributed.all_reduce(probe_reduced)",
            "print(probe_reduced)",
        ],
        probe_index=1,
    ),
    _probe("subprocess_run", {"VP204"}, lambda s, n: f'{n.subprocess}.run(["nvidia-smi"])', {"subprocess"}),
    _probe("empty_cache", {"VP403"}, lambda s, n: f"{n.torch}.cuda.empty_cache()"),
    _probe("cuda_synchronize", {"VP203"}, lambda s, n: f"{n.torch}.cuda.synchronize()"),
    _probe("event_synchronize", {"VP203"}, lambda s, n: f"{n.torch}.cuda.Event().synchronize()"),
    _probe("stream_synchronize", {"VP203"}, lambda s, n: f"{n.torch}.cuda.current_stream().synchronize()"),
)

PROBES_BY_NAME = {probe.name: probe for probe in PROBES}

# Probes whose cost is an API call with no tensor argument: the alias path kind binds the API
# itself (`probe_sync = torch.cuda.synchronize`) instead of a helper function.
API_ALIASES: dict[str, tuple[Callable[[Aliases], str], str]] = {
    "cuda_synchronize": (lambda n: f"{n.torch}.cuda.synchronize", ""),
    "event_synchronize": (lambda n: f"{n.torch}.cuda.Event().synchronize", ""),
    "stream_synchronize": (lambda n: f"{n.torch}.cuda.current_stream().synchronize", ""),
    "empty_cache": (lambda n: f"{n.torch}.cuda.empty_cache", ""),
    "subprocess_run": (lambda n: f"{n.subprocess}.run", '["nvidia-smi"]'),
}
