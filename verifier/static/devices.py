"""What a module says about the devices it runs on: does it use CUDA, may it run without it?

Fed from calls (qualified names) and device strings during the walk. VP103 asks whether CUDA is
used (then batches should be pinned); VP308 asks whether CUDA may be absent (then a GradScaler
left on its default device disables itself).
"""

from __future__ import annotations

import libcst as cst

from verifier.static.names import ImportTable, keyword_arg, literal_string, method_name, positional_arg, terminal_name

# Checks that only make sense when the code may also run without CUDA.
_AVAILABILITY_CHECKS = frozenset(
    {"torch.cuda.is_available", "torch.backends.mps.is_available",
     "torch.xpu.is_available", "torch.accelerator.is_available"}
)
# "cpu" is no evidence: `map_location="cpu"` and `.to("cpu")` are common in CUDA-only code.
_NON_CUDA_ACCELERATORS = frozenset({"mps", "xpu"})
_HOST_DEVICES = frozenset({"cpu", "meta"})
# Variables that by convention name a device (`device`, `self.dev`, `local_rank`, `gpu_id`).
_DEVICE_WORDS = ("device", "gpu")
_DEVICE_NAMES = frozenset({"dev", "cuda", "rank", "local_rank"})


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


def destination(node: cst.BaseExpression, imports: ImportTable) -> bool | None:
    """True for an accelerator, False for the host or a dtype, None when it cannot be told."""
    if type(node) is cst.SimpleString:
        text = literal_string(node)
        return None if text is None else text.split(":", 1)[0] not in _HOST_DEVICES
    if type(node) is cst.FormattedString:
        head = node.parts[0] if node.parts else None
        if type(head) is cst.FormattedStringText:
            return head.value.split(":", 1)[0] not in _HOST_DEVICES if head.value else None
        return None
    if type(node) is cst.Integer:
        return True
    if type(node) is cst.Call:
        qualified = imports.call_name(node) or ""
        if qualified == "torch.device":
            first = positional_arg(node, 0) or keyword_arg(node, "type")
            return destination(first.value, imports) if first is not None else None
        if qualified.startswith("torch.cuda."):
            return True
        # `dist_util.dev()`, `get_device()`: a helper whose name says it returns a device.
        return True if _names_a_device(terminal_name(node.func)) and not node.args else None
    if type(node) in (cst.Name, cst.Attribute):
        if (imports.qualified_name(node) or "").startswith("torch."):
            return False  # torch.float16, torch.long: a dtype cast, not a copy
        name = (terminal_name(node) or "").lower()
        if "cpu" in name or "dtype" in name:
            return False
        if name in _DEVICE_NAMES or any(word in name for word in _DEVICE_WORDS):
            return True
    return None


def _names_a_device(name: str | None) -> bool:
    lowered = (name or "").lower()
    if not lowered or "cpu" in lowered:
        return False
    return lowered in _DEVICE_NAMES or any(word in lowered for word in _DEVICE_WORDS)
