"""VP308 deprecated-amp-api: deprecated AMP objects, and GradScalers that disable themselves without CUDA.

Deprecated (FutureWarning since torch 2.4), by qualified name however imported:
`torch.cuda.amp.GradScaler/autocast/custom_fwd/custom_bwd` and `torch.cpu.amp.GradScaler/autocast`,
called or used as a decorator. Silently disabled: `torch.amp.GradScaler()` (also `torch.GradScaler`,
FSDP's `ShardedGradScaler`) with no device argument, which defaults to "cuda" and turns itself off
with one warning when CUDA is absent. That one is reported only where the module shows CUDA may
be absent (it checks `torch.cuda.is_available()` or targets MPS/XPU) and does not pass `enabled=`
itself; in a module that assumes CUDA throughout, the default is what the author meant.
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.amp import CUDA_DEFAULT_SCALERS, DEPRECATED_AMP
from verifier.static.autofix import Fix
from verifier.static.call_edits import holds_comment, keyword_argument, positional_as_keywords, prepend_arguments
from verifier.static.devices import DeviceEvidence
from verifier.static.heat import Where
from verifier.static.names import has_star_args, keyword_arg, positional_arg, terminal_name
from verifier.static.rule import Invalid, Rule


class DeprecatedAmpApi(Rule):
    code = "VP308"
    name = "deprecated-amp-api"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.LOW)
    cost = "a deprecated AMP API, or a GradScaler that disables itself without CUDA"
    tokens = ("GradScaler", "autocast", "custom_fwd", "custom_bwd")
    summary = (
        "Finds deprecated `torch.cuda.amp` / `torch.cpu.amp` objects, and `torch.amp.GradScaler()` "
        "without a device in code that may run without CUDA."
    )
    why = (
        "`torch.cuda.amp.GradScaler(...)` and `torch.cuda.amp.autocast(...)` are deprecated since "
        "torch 2.4 and emit a FutureWarning; `torch.amp` replaces them and takes the device explicitly. "
        "`torch.amp.GradScaler()` without a device defaults to CUDA; on a machine without CUDA it "
        "warns once and disables itself, so `scale()` returns the loss unchanged and the run "
        "silently trains without loss scaling while the code reads as if AMP were on."
    )
    example = """\
scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    loss = criterion(model(x), y)
"""
    use_instead = """\
scaler = torch.amp.GradScaler("cuda")
with torch.autocast("cuda", dtype=torch.float16):
    loss = criterion(model(x), y)
"""
    fix = 'Use `torch.amp.GradScaler(device)` and `torch.autocast(device_type, ...)` with the device named explicitly.'
    autofix = (
        '`torch.cuda.amp.autocast(...)` becomes `torch.autocast("cuda", dtype=torch.float16, ...)` and '
        '`torch.cuda.amp.GradScaler(...)` becomes `torch.amp.GradScaler("cuda", ...)` (`torch.cpu.amp` likewise, '
        "with `cpu` and bfloat16), where the call goes through the `torch` module; it needs torch 2.3 or later"
    )
    autofix_safe = True
    references = (
        "https://pytorch.org/docs/stable/amp.html",
        "https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._devices = DeviceEvidence()
        self._implicit_device: list[tuple[cst.Call, str, Where]] = []
        # Inside `except (AttributeError, ImportError, TypeError):` the old API is the fallback
        # for torch versions without the new one: compatibility code, not a deprecated use.
        self._fallbacks = 0

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._fallbacks += _is_version_fallback(node)

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._fallbacks -= _is_version_fallback(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._devices.see_call(node, self.context.imports)
        qualified = self.context.imports.call_name(node)
        if qualified in DEPRECATED_AMP:
            self._report_deprecated(node, qualified, self._modern_call(node, qualified))
        elif qualified in CUDA_DEFAULT_SCALERS and _device_left_to_default(node):
            self._implicit_device.append((node, qualified, self.context.heat.here()))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        # `@custom_fwd` without parentheses; the called form is a Call and seen by visit_Call.
        if type(node.decorator) is not cst.Call:
            qualified = self.context.imports.qualified_name(node.decorator)
            if qualified in DEPRECATED_AMP:
                self._report_deprecated(node.decorator, qualified)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._devices.see_string(node)

    def leave_Module(self, node: cst.Module) -> None:
        if not self._devices.cuda_may_be_absent:
            return
        for call, qualified, where in self._implicit_device:
            self.report(
                call,
                f"`{self.context.code_for(call.func)}()` without a device defaults to CUDA and disables itself "
                "(one warning) where CUDA is absent, and this module may run without CUDA",
                where=where,
                fix='Name the device (`GradScaler("cuda")`, or the device type the model runs on) and pass '
                "`enabled=` explicitly when AMP is optional.",
            )

    def _report_deprecated(self, node: cst.CSTNode, qualified: str, autofix: Fix | None = None) -> None:
        if self._fallbacks:
            return
        replacement = DEPRECATED_AMP[qualified]
        self.report(
            node,
            f"`{qualified}` is deprecated (FutureWarning since torch 2.4): use `{replacement}`",
            fix=f"Replace it with `{replacement}`.",
            autofix=autofix,
        )

    def _modern_call(self, call: cst.Call, qualified: str) -> Fix | None:
        """The same call through `torch.autocast` / `torch.amp.GradScaler`, or None where the call
        does not go through a name bound to the `torch` module, hides arguments in `*args` or
        `**kwargs`, or spells its function with a comment inside."""
        torch = _torch_module_name(call.func, self.context.imports)
        if torch is None or has_star_args(call) or holds_comment(call.func):
            return None
        if qualified in _AUTOCAST_DEVICES:
            device, dtype = _AUTOCAST_DEVICES[qualified]
            named = positional_as_keywords(call, _AUTOCAST_PARAMETERS)
            if named is None:
                return None
            added = [cst.Arg(cst.SimpleString(f'"{device}"'))]
            if keyword_arg(named, "dtype") is None:
                # The old class passed this dtype; `torch.autocast` would read the global default.
                added.append(keyword_argument("dtype", cst.Attribute(cst.Name(torch), cst.Name(dtype))))
            new = prepend_arguments(named, added).with_changes(func=cst.Attribute(cst.Name(torch), cst.Name("autocast")))
            return self.offer_fix(call, new, f'Use `{torch}.autocast("{device}", ...)`')
        device = _SCALER_DEVICES.get(qualified)
        if device is None:
            return None
        # The new GradScaler takes the device first: the old positional arguments keep their meaning.
        func = cst.Attribute(cst.Attribute(cst.Name(torch), cst.Name("amp")), cst.Name("GradScaler"))
        new = prepend_arguments(call, [cst.Arg(cst.SimpleString(f'"{device}"'))]).with_changes(func=func)
        return self.offer_fix(call, new, f'Use `{torch}.amp.GradScaler("{device}", ...)`')

    VALID = (
        """\
import torch
scaler = torch.amp.GradScaler("cuda")
with torch.autocast("cuda", dtype=torch.float16):
    loss = model(x).sum()
""",
        """\
import torch
device = "cuda"
scaler = torch.amp.GradScaler()
""",
        """\
import torch
use_amp = torch.cuda.is_available()
scaler = torch.amp.GradScaler(enabled=use_amp)
other = torch.amp.GradScaler(**scaler_kwargs)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
scaler = torch.cuda.amp.GradScaler()
""",
            line=2,
            severity=Severity.LOW,
            fixed="""\
import torch
scaler = torch.amp.GradScaler("cuda")
""",
        ),
        Invalid(
            """\
import torch as t
for x, y in loader:
    with t.cuda.amp.autocast(True, t.bfloat16):
        loss = model(x).sum()
    loss.backward()
""",
            line=3,
            severity=Severity.LOW,
            fixed="""\
import torch as t
for x, y in loader:
    with t.autocast("cuda", enabled=True, dtype=t.bfloat16):
        loss = model(x).sum()
    loss.backward()
""",
        ),
        Invalid(
            """\
from torch.cuda.amp import autocast
for x, y in loader:
    with autocast(dtype=torch.bfloat16):
        loss = model(x).sum()
    loss.backward()
""",
            line=3,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
from torch.amp import GradScaler
device = "cuda" if torch.cuda.is_available() else "cpu"
scaler = GradScaler()
""",
            line=4,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
from torch.cuda.amp import custom_fwd

class ScaledMatmul(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(ctx, a, b):
        return a @ b
""",
            line=5,
            severity=Severity.LOW,
        ),
    )


def _device_left_to_default(call: cst.Call) -> bool:
    """No device given, no `enabled=` decision, nothing hidden in `*args`/`**kwargs`."""
    if has_star_args(call) or keyword_arg(call, "enabled") is not None:
        return False
    return keyword_arg(call, "device") is None and positional_arg(call, 0) is None


# What the deprecated classes passed to `torch.autocast`: the device and the dtype by default.
_AUTOCAST_DEVICES = {
    "torch.cuda.amp.autocast": ("cuda", "float16"),
    "torch.cuda.amp.autocast_mode.autocast": ("cuda", "float16"),
    "torch.cpu.amp.autocast": ("cpu", "bfloat16"),
    "torch.cpu.amp.autocast_mode.autocast": ("cpu", "bfloat16"),
}
# Their positional parameters, in order; `torch.autocast` orders them differently.
_AUTOCAST_PARAMETERS = ("enabled", "dtype", "cache_enabled")
_SCALER_DEVICES = {
    "torch.cuda.amp.GradScaler": "cuda",
    "torch.cuda.amp.grad_scaler.GradScaler": "cuda",
    "torch.cpu.amp.GradScaler": "cpu",
    "torch.cpu.amp.grad_scaler.GradScaler": "cpu",
}


def _torch_module_name(func: cst.BaseExpression, imports) -> str | None:
    """`t` for `t.cuda.amp.autocast` when `t` is the `torch` module (`import torch as t`), else None."""
    while type(func) is cst.Attribute:
        func = func.value
    if type(func) is cst.Name and imports.qualify(func.value) == "torch":
        return func.value
    return None


_VERSION_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError"})


def _is_version_fallback(handler: cst.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return False
    names = [e.value for e in kind.elements] if type(kind) is cst.Tuple else [kind]
    return any(terminal_name(name) in _VERSION_ERRORS for name in names)
