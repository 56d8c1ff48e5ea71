"""What a module says about the devices it runs on: does it use CUDA, may it run without it?

Fed from calls (qualified names) and device strings during the walk. VP103 asks whether CUDA is
used (then batches should be pinned); VP308 asks whether CUDA may be absent (then a GradScaler
left on its default device disables itself).
"""

from __future__ import annotations

import libcst as cst

from verifier.static.names import ImportTable, literal_string, method_name

# Checks that only make sense when the code may also run without CUDA.
_AVAILABILITY_CHECKS = frozenset(
    {"torch.cuda.is_available", "torch.backends.mps.is_available",
     "torch.xpu.is_available", "torch.accelerator.is_available"}
)
# "cpu" is no evidence: `map_location="cpu"` and `.to("cpu")` are common in CUDA-only code.
_NON_CUDA_ACCELERATORS = frozenset({"mps", "xpu"})


class DeviceEvidence:
    def __init__(self) -> None:
        self.uses_cuda = False
        self.cuda_may_be_absent = False

    def see_call(self, call: cst.Call, imports: ImportTable) -> None:
        qualified = imports.call_name(call) or ""
        if qualified in _AVAILABILITY_CHECKS:
            self.cuda_may_be_absent = True
        # `torch.accelerator.current_accelerator()` is CUDA wherever a GPU is (pinning applies).
        if qualified.startswith(("torch.cuda.", "torch.accelerator.")) or method_name(call) == "cuda":
            self.uses_cuda = True

    def see_string(self, node: cst.SimpleString) -> None:
        """`"cuda"`, `"cuda:0"`, `"mps"`: device names, not prose (a docstring never matches)."""
        value = literal_string(node) if len(node.value) <= 16 else None
        if value is None:
            return
        kind = value.split(":", 1)[0]
        if kind == "cuda":
            self.uses_cuda = True
        elif kind in _NON_CUDA_ACCELERATORS:
            self.cuda_may_be_absent = True
