import pytest

from desktop.core.builtins.calculator import CALCULATOR, CalculationError, evaluate
from desktop.core.tools import Toolbox


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("23 * 19", {"result": 437}),
        ("0.1 + 0.2", {"result": "3/10", "decimal": "0.3"}),
        ("1/3", {"result": "1/3", "decimal": "0.333333333333333"}),
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
