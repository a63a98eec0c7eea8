"""The judge, without a provider: limit, validation, repeat, cooldown and approval, in
that order, each refusal with its stage."""

from typing import Any

from desktop.core.judge import Judge
from desktop.core.messages import ToolCall
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.toolbox import Tool, Toolbox


async def noop(arguments: dict[str, Any]) -> str:
    return ""


SEARCH = Tool(
    "search",
    "Search",
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    noop,
)
DELETE = Tool("delete", "Deletes", {"type": "object"}, noop, needs_approval=True)
SLOW = Tool(
    "slow", "Has a cooldown", {"type": "object", "properties": {"n": {"type": "integer"}}}, noop,
    cooldown_s=60,
)  # fmt: skip


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(f"id-{name}-{len(arguments)}", name, arguments)


def judge(max_calls: int = 5, approve: bool | None = None) -> Judge:
    async def approver(call: ToolCall, tool: Tool) -> bool:
        return bool(approve)

    box = Toolbox([SEARCH, DELETE, SLOW])
    return Judge(box, max_calls, Deduplicator(), approver if approve is not None else None)


async def test_a_valid_call_may_run_and_spends_one() -> None:
    j = judge()
    assert await j.judge(call("search", q="rust")) is None
    assert j.spent == 1 and not j.spent_all


async def test_invalid_arguments_of_a_real_tool_are_fixable_an_unknown_tool_is_not() -> None:
    j = judge()
    invalid = await j.judge(call("search", q=3))
    unknown = await j.judge(call("nope"))
    assert invalid is not None and invalid.stage == "validation" and invalid.fixable
    assert unknown is not None and unknown.stage == "validation" and not unknown.fixable
    assert "Available functions: search, delete, slow" in unknown.reason
    assert j.spent == 2  # refused calls spend the budget too


async def test_arguments_too_large_to_keep_are_refused_with_that_reason() -> None:
    verdict = await judge().judge(call("search", q="x"), too_large="too deep")
    assert verdict is not None and verdict.reason == "too deep" and verdict.fixable


async def test_an_exact_repeat_then_a_cooldown() -> None:
    j = judge()
    assert await j.judge(call("search", q="a")) is None
    repeat = await j.judge(call("search", q="a"))
    assert repeat is not None and repeat.stage == "repeat"
    assert await j.judge(call("slow", n=1)) is None
    again = await j.judge(call("slow", n=2))
    assert again is not None and again.stage == "cooldown"


async def test_approval_is_asked_last_and_without_an_approver_the_call_is_declined() -> None:
    for approve, expected in ((True, None), (False, "denied"), (None, "denied")):
        verdict = await judge(approve=approve).judge(call("delete"))
        assert (verdict and verdict.stage) == expected


async def test_the_limit_comes_first_and_spends_nothing_more() -> None:
    j = judge(max_calls=1)
    assert await j.judge(call("search", q="a")) is None
    assert j.spent_all
    over = await j.judge(call("nope"))  # even an unknown tool: the limit is said first
    assert over is not None and over.stage == "limit" and "limit of 1 tool calls" in over.reason
    assert j.spent == 1


def test_a_broken_call_spends_one() -> None:
    j = judge(max_calls=1)
    j.spend_broken()
    assert j.spent_all
