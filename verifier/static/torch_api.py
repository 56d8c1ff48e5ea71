"""What the public torch API returns, by qualified name: shared by the value model (is this a
tensor?) and the heat model (is this loop doing tensor work?)."""

from __future__ import annotations

# Public torch namespaces whose functions return tensors; anything else under torch (private
# modules, cuda/distributed/utils helpers, `is_*` predicates) is of unknown kind.
TENSOR_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.nested"}
)
# `nn.Module` methods that return the module itself, moved, cast or switched (`Net().cuda()`,
# `model.half()`, `model.eval()`); tensors share some of the names (`.cuda()`, `.float()`).
MODULE_SELF_METHODS = frozenset(
    {"cuda", "to", "half", "float", "bfloat16", "double", "train", "eval", "requires_grad_", "to_empty"}
)
NON_TENSOR_TORCH_FUNCTIONS = frozenset(
    {"device", "dtype", "no_grad", "inference_mode", "enable_grad", "manual_seed", "autocast",
     "save", "load", "finfo", "iinfo", "Size", "Generator", "compile", "typename", "numel",
     "get_default_dtype", "set_default_dtype", "set_grad_enabled", "use_deterministic_algorithms",
     "set_float32_matmul_precision", "get_float32_matmul_precision", "set_printoptions", "seed",
     "initial_seed", "vmap", "cond", "broadcast_shapes", "result_type", "promote_types", "can_cast",
     "allclose", "equal"}
)


def returns_tensor(qualified: str) -> bool:
    """`torch.zeros`, `torch.nn.functional.relu`: a public torch function that returns a tensor
    (not `torch.manual_seed`, `torch.cuda.*`, `torch.is_tensor`, private helpers)."""
    namespace, _, last = qualified.rpartition(".")
    return (
        namespace in TENSOR_NAMESPACES
        and last not in NON_TENSOR_TORCH_FUNCTIONS
        and not last.startswith(("is_", "has_", "_", "get_", "set_"))
    )


# GradScaler methods that change its scale (or replace its state) in place.
_SCALER_MUTATORS = frozenset({"update", "load_state_dict"})


def mutates_its_receiver(method: str | None) -> bool:
    """`t.add_(1)`, `t.zero_()`, `scaler.update()`: the call changes the value it is called on, so a
    read after it is of another value than a read before it."""
    return method is not None and (
        (method.endswith("_") and not method.startswith("_")) or method in _SCALER_MUTATORS
    )
