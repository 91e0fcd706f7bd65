"""Integer arithmetic for `$((...))` and `expr`, over Python's parsed expression tree (only
integer operators are evaluated; anything else is an error)."""

from __future__ import annotations

import ast
from collections.abc import Callable

__all__ = ["divide", "evaluate"]


def divide(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


_ARITH_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: divide,
    ast.FloorDiv: divide,
    ast.Mod: lambda a, b: a - b * divide(a, b),
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}
_COMPARE_OPS: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def evaluate(node: ast.AST) -> int:
    """Integer arithmetic as `$((...))` does it, over a parsed expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
        return _ARITH_OPS[type(node.op)](evaluate(node.left), evaluate(node.right))
    if isinstance(node, ast.UnaryOp):
        value = evaluate(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Not):
            return int(not value)
        if isinstance(node.op, ast.Invert):
            return ~value
    if isinstance(node, ast.BoolOp):
        values = [evaluate(v) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare):
        left = evaluate(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = evaluate(comparator)
            if type(op) not in _COMPARE_OPS or not _COMPARE_OPS[type(op)](left, right):
                return 0
            left = right
        return 1
    raise ValueError("unsupported arithmetic")
