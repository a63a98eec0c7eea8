"""`calculator`: exact arithmetic on an expression, parsed safely (never `eval`)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from desktop.core.tools import Example, Tool

MAX_EXPONENT = 10_000
MAX_DIGITS = 1_000
MAX_LENGTH = 500

_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: lambda a, b: Fraction(a // b),
    ast.Mod: operator.mod,
}


class CalculationError(ValueError):
    pass


def evaluate(expression: str) -> Fraction:
    """The exact value of an arithmetic expression: numbers, + - * / // % **, parentheses."""
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise CalculationError("the expression is empty")
    if len(text) > MAX_LENGTH:
        raise CalculationError(f"the expression is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculationError(f"not an arithmetic expression: {expression!r}") from None
    return _value(tree.body)


def _value(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, int):
            return Fraction(node.value)
        if isinstance(node.value, float):
            return Fraction(str(node.value))  # 0.1 is one tenth, not its binary neighbour
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _value(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        op = _BINARY.get(type(node.op))
        if op is None:
            raise CalculationError(f"unsupported operator: {type(node.op).__name__}")
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
            raise CalculationError("division by zero")
        return op(left, right)
    raise CalculationError(f"unsupported element: {ast.unparse(node)!r}")


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise CalculationError("only whole-number exponents can be computed exactly")
    if abs(exponent) > MAX_EXPONENT:
        raise CalculationError(f"the exponent is larger than {MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise CalculationError("division by zero")
    # Refuse before computing a number too large to be useful.
    if abs(base) > 1 and abs(exponent) * len(str(abs(base.numerator))) > MAX_DIGITS * 2:
        raise CalculationError(f"the result would have more than {MAX_DIGITS} digits")
    return base ** int(exponent)


def describe(value: Fraction) -> dict[str, Any]:
    if value.denominator == 1:
        digits = str(value.numerator)
        if len(digits) > MAX_DIGITS:
            raise CalculationError(f"the result has more than {MAX_DIGITS} digits")
        return {"result": value.numerator}
    decimal = f"{float(value):.15g}" if abs(value) < 1e300 else "too large"
    return {"result": f"{value.numerator}/{value.denominator}", "decimal": decimal}


async def calculate(arguments: dict[str, Any]) -> dict[str, Any]:
    expression = str(arguments["expression"])
    return {"expression": expression, **describe(evaluate(expression))}


CALCULATOR = Tool(
    name="calculator",
    description=(
        "Compute an arithmetic expression exactly: numbers, + - * / // % ** and parentheses. "
        "Use it for any arithmetic instead of calculating yourself."
    ),
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "e.g. (12.5 + 7) * 3 / 4"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
    handler=calculate,
    timeout_s=5,
    examples=(
        Example("What is 23 times 19?", {"expression": "23 * 19"}),
        Example("How much is 15% of 240?", {"expression": "240 * 15 / 100"}),
    ),
)
