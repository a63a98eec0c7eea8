"""`calculator`: exact arithmetic on an expression, parsed safely (never `eval`).

Every value, intermediate ones included, is kept under a size bound, so no expression can
run for long; and the evaluation runs in a worker process all the same, which the tool's
timeout kills (desktop.core.tools.isolation).
"""

from __future__ import annotations

import ast
import decimal
import math
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from desktop.core.errors import ToolError
from desktop.core.tool_spec import Example
from desktop.core.tools.isolation import run_isolated
from desktop.core.tools.toolbox import Tool

MAX_EXPONENT = 10_000
MAX_DIGITS = 1_000
MAX_LENGTH = 500
# Numerator and denominator of every value, intermediate ones too: a little over 4,000
# digits (Python's own limit for turning an int into text is 4,300).
MAX_BITS = 13_500

_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: lambda a, b: Fraction(a // b),
    ast.Mod: operator.mod,
}


class CalculationError(ToolError, ValueError):
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
    try:
        return _value(tree.body)
    except RecursionError:
        raise CalculationError("the expression is nested too deeply") from None


def _value(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, int):
            return Fraction(node.value)
        if isinstance(node.value, float):
            if not math.isfinite(node.value):
                raise CalculationError(f"the number {ast.unparse(node)} is too large")
            return _bounded(Fraction(str(node.value)))  # 0.1 is one tenth, not its neighbour
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
        return _bounded(op(left, right))
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
    # And bound the size: numerator and denominator both grow with the exponent,
    # for a base below one as much as above ((1/3)**10000 has 4,772 digits below the line).
    size = max(base.numerator.bit_length(), base.denominator.bit_length())
    if size > 1 and abs(exponent) * (size - 1) > MAX_BITS:
        raise CalculationError(_TOO_LARGE)
    return _bounded(base ** int(exponent))


_TOO_LARGE = f"a value in the calculation would have more than {MAX_BITS * 3 // 10} digits"


def _bounded(value: Fraction) -> Fraction:
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise CalculationError(_TOO_LARGE)
    return value


def describe(value: Fraction) -> dict[str, Any]:
    """The result as a calculator shows it: a whole number, or a decimal of 15 significant
    digits (computed exactly, rounded once). Small models misread a fraction ("799/2" as
    "799.5") and copy one given beside its decimal."""
    if value.denominator == 1:
        digits = str(value.numerator)
        if len(digits) > MAX_DIGITS:
            raise CalculationError(f"the result has more than {MAX_DIGITS} digits")
        return {"result": value.numerator}
    return {"result": _as_number(_decimal(value))}


def _as_number(text: str) -> float | str:
    """A JSON number where a float holds exactly this decimal, else the text (a float
    would turn 1e-1193 into 0.0, and 1e+400 into inf)."""
    number = float(text)
    exact = math.isfinite(number) and Fraction(repr(number)) == Fraction(text)
    return number if exact else text


def calculate_now(expression: str) -> dict[str, Any]:
    return {"expression": expression, **describe(evaluate(expression))}


def _decimal(value: Fraction) -> str:
    """15 significant digits, however small or large (a float would say 0.0 or inf)."""
    with decimal.localcontext() as context:
        context.prec = 15
        context.Emax, context.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        quotient = decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)
        return f"{quotient:.15g}"


async def calculate(arguments: dict[str, Any]) -> dict[str, Any]:
    return await run_isolated(calculate_now, str(arguments["expression"]))


CALCULATOR = Tool(
    name="calculator",
    description=(
        "Compute an arithmetic expression exactly: numbers, + - * / // % ** and parentheses. "
        "Use it for any arithmetic instead of calculating yourself: sums and totals, "
        "differences, products, division, averages, percentages, unit conversions."
    ),
    parameters={
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "description": "e.g. (12.5 + 7) * 3 / 4",
                # Under a grammar the model can write nothing but arithmetic here: no words.
                "pattern": r"^[0-9.eE_+\-*/%^()×÷ ]+$",
            }
        },
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
