import asyncio
import time

import pytest

from desktop.core.tools.builtin.calculator import CALCULATOR, CalculationError, evaluate
from desktop.core.tools.toolbox import Toolbox


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("23 * 19", {"result": 437}),
        ("0.1 + 0.2", {"result": 0.3}),
        ("2350 * 17 / 100", {"result": 399.5}),
        ("-1/8", {"result": -0.125}),
        ("1e-5", {"result": 0.00001}),
        ("1/3", {"result": 0.333333333333333}),
        ("2**-60", {"result": 8.67361737988404e-19}),
        ("2^10", {"result": 1024}),
        ("-(3 - 5) * 4", {"result": 8}),
        ("7 // 2 + 7 % 2", {"result": 4}),
        ("12 × 3 ÷ 4", {"result": 9}),
        ("2 ** 100", {"result": 2**100}),
    ],
)
async def test_exact_results(expression: str, result: dict[str, object]) -> None:
    assert await CALCULATOR.handler({"expression": expression}) == {
        "expression": expression,
        **result,
    }


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "unsupported element"),
        ("open('/etc/passwd')", "unsupported element"),
        ("1 / 0", "division by zero"),
        ("2 ** 0.5", "whole-number exponents"),
        ("9 ** 9 ** 9", "exponent is larger"),
        ("10 ** 5000", "more than 1000 digits"),
        ("True + 1", "unsupported element"),
        ("1 +", "not an arithmetic expression"),
        ("", "empty"),
        ("1" * 600, "longer than 500"),
    ],
)
def test_refusals(expression: str, message: str) -> None:
    with pytest.raises(CalculationError, match=message):
        evaluate(expression)


def test_schema() -> None:
    box = Toolbox([CALCULATOR])
    assert box.validate("calculator", {"expression": "1+1"}) is None
    assert box.validate("calculator", {}) is not None
    assert box.validate("calculator", {"expression": "1", "precision": 3}) is not None


@pytest.mark.parametrize(
    "expression",
    [
        "((1/3)**10000)**10000",  # a base below one grows too: once ran forever
        "(2/3)**10000",
        "(1/7)**5000 * (1/11)**5000",
        "(10**400 + 1/3) ** 40",
        "((1/3)**3000) * ((1/3)**3000) * ((1/3)**3000)",
    ],
)
async def test_values_too_large_are_refused_at_once(expression: str) -> None:
    started = time.perf_counter()
    with pytest.raises(CalculationError, match="digits"):
        await asyncio.wait_for(CALCULATOR.handler({"expression": expression}), 10)
    assert time.perf_counter() - started < 5


async def test_an_infinite_float_is_refused() -> None:
    with pytest.raises(CalculationError, match="too large"):
        await CALCULATOR.handler({"expression": "1e999 * 2"})


@pytest.mark.parametrize(
    ("expression", "result"),
    [("-" * 450 + "1", 1), ("(" * 190 + "7" + ")" * 190, 7)],
)
async def test_deep_but_valid_expressions_are_computed(expression: str, result: int) -> None:
    assert (await CALCULATOR.handler({"expression": expression}))["result"] == result


@pytest.mark.parametrize(
    ("expression", "result"),
    [("10**400 + 0.5", "1.00000000000000e+400"), ("-10**400 - 0.5", "-1.00000000000000e+400")],
)
async def test_a_decimal_beyond_a_floats_range_is_given_as_text(
    expression: str, result: str
) -> None:
    assert (await CALCULATOR.handler({"expression": expression}))["result"] == result


async def test_a_decimal_no_float_can_hold_is_given_as_text() -> None:
    answer = await CALCULATOR.handler({"expression": "(1/3)**2500"})
    # 3**-2500 = 10**-(2500 * log10(3)) = 10**-1192.80314: a float would have said 0.0
    assert answer["result"] == "1.57348715100873e-1193"
