"""Code that runs only every N steps: the body of `if step % N == 0:`.

Such a body runs once per N iterations of its loop, so a costly call there is not paid every
step. Rules lower their severity for it; the heat model still calls it step code.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.walk import iter_descendants


def is_periodic_test(test: cst.BaseExpression) -> bool:
    """`step % N == 0`, `(i + 1) % log_every == 0`, `not step % N`, also inside `and`."""
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And):
            return is_periodic_test(test.left) or is_periodic_test(test.right)
        return is_periodic_test(test.left) and is_periodic_test(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_modulo(test.expression)
    if isinstance(test, cst.Comparison):
        operands = [test.left] + [c.comparator for c in test.comparisons]
        return any(isinstance(c.operator, cst.Equal) for c in test.comparisons) and any(map(_is_modulo, operands))
    return False


def periodic_calls(node: cst.If) -> frozenset[int]:
    """Ids of the calls that run only when a periodic `if` holds (its body, not its `else`)."""
    if not is_periodic_test(node.test):
        return frozenset()
    return frozenset(id(n) for n in iter_descendants(node.body) if isinstance(n, cst.Call))


def _is_modulo(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)
