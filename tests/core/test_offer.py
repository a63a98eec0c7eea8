"""What a turn offers next: tools until the limit, a repeat, or invalid calls past their
retries; then none, with the withdrawn tools named in the options and the reason kept."""

from typing import Any

from desktop.core.offer import ToolOffer
from desktop.core.providers.base import RequestOptions
from desktop.core.tools.toolbox import Tool, Toolbox


async def noop(arguments: dict[str, Any]) -> str:
    return ""


BOX = Toolbox([Tool("a", "A", {"type": "object"}, noop), Tool("b", "B", {"type": "object"}, noop)])


def test_tools_are_offered_until_a_step_withdraws_them() -> None:
    offer = ToolOffer(BOX, invalid_retries=1)
    assert [t.name for t in offer.tools] == ["a", "b"]
    assert offer.options(RequestOptions()).withdrawn_tools == ()
    offer.after_step(limit=None, repeated=False, invalid=False)
    assert offer.tools and offer.withdrawn == ""


def test_the_limit_withdraws_them_and_says_so() -> None:
    offer = ToolOffer(BOX, invalid_retries=1)
    offer.after_step(limit=3, repeated=True, invalid=True)
    assert offer.tools == []
    assert offer.withdrawn == "tools were withdrawn after 3 tool calls"  # the limit said first
    assert [t.name for t in offer.options(RequestOptions(seed=1)).withdrawn_tools] == ["a", "b"]
    assert offer.options(RequestOptions(seed=1)).seed == 1


def test_a_repeat_withdraws_them() -> None:
    offer = ToolOffer(BOX, invalid_retries=1)
    offer.after_step(limit=None, repeated=True, invalid=True)
    assert offer.tools == [] and offer.withdrawn == "tools were withdrawn after a repeated call"


def test_invalid_calls_keep_them_for_the_retries_then_withdraw_them() -> None:
    offer = ToolOffer(BOX, invalid_retries=1)
    offer.after_step(limit=None, repeated=False, invalid=True)
    assert offer.tools  # the model is shown why and may put it right
    offer.after_step(limit=None, repeated=False, invalid=True)
    assert offer.tools == [] and offer.withdrawn == "tools were withdrawn after invalid calls"


def test_an_empty_toolbox_offers_nothing_and_withdraws_nothing() -> None:
    offer = ToolOffer(Toolbox(), invalid_retries=1)
    assert offer.tools == [] and offer.options(RequestOptions()).withdrawn_tools == ()
