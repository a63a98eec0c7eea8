from typing import Any

from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.toolbox import Tool


async def noop(arguments: dict[str, Any]) -> str:
    return ""


def tool(name: str = "search", cooldown_s: float | None = None) -> Tool:
    return Tool(name, "d", {"type": "object"}, noop, cooldown_s=cooldown_s)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_exact_repeat_in_a_turn_is_rejected_and_allowed_next_turn() -> None:
    """Edge case 13."""
    dedupe = Deduplicator()
    search = tool()
    assert dedupe.check(search, {"q": "x"}) is None
    dedupe.record(search, {"q": "x"})
    refusal = dedupe.check(search, {"q": "x"})
    assert refusal is not None and refusal.kind == "repeat"
    assert "already made in this turn" in refusal.reason
    assert dedupe.check(search, {"q": "y"}) is None
    dedupe.new_turn()
    assert dedupe.check(search, {"q": "x"}) is None


def test_cooldown_blocks_other_arguments_until_it_expires() -> None:
    """Edge case 15, per tool instead of one env switch."""
    clock = Clock()
    dedupe = Deduplicator(clock=clock)
    slow = tool("tickets", cooldown_s=30)
    dedupe.record(slow, {"title": "one"})
    refusal = dedupe.check(slow, {"title": "two"})
    assert refusal is not None and refusal.kind == "cooldown"
    assert "cooldown for 30 more s" in refusal.reason
    clock.now += 29
    assert dedupe.check(slow, {"title": "two"}) is not None
    clock.now += 2
    assert dedupe.check(slow, {"title": "two"}) is None


def test_cooldown_outlives_the_turn() -> None:
    clock = Clock()
    dedupe = Deduplicator(clock=clock)
    slow = tool("tickets", cooldown_s=10)
    dedupe.record(slow, {"title": "one"})
    dedupe.new_turn()
    assert dedupe.check(slow, {"title": "two"}) is not None


def test_tools_without_a_cooldown_are_never_on_cooldown() -> None:
    dedupe = Deduplicator()
    fast = tool()
    dedupe.record(fast, {"q": 1})
    assert dedupe.check(fast, {"q": 2}) is None


def test_global_switch_and_per_tool_override() -> None:
    """The GUI toggle: off globally, back on for one tool (and the reverse)."""
    slow = tool("tickets", cooldown_s=30)
    other = tool("mail", cooldown_s=30)
    dedupe = Deduplicator(cooldown_enabled=False, cooldown_overrides={"tickets": True})
    for t in (slow, other):
        dedupe.record(t, {"n": 1})
    assert dedupe.check(slow, {"n": 2}) is not None
    assert dedupe.check(other, {"n": 2}) is None

    dedupe = Deduplicator(cooldown_enabled=True, cooldown_overrides={"tickets": False})
    for t in (slow, other):
        dedupe.record(t, {"n": 1})
    assert dedupe.check(slow, {"n": 2}) is None
    assert dedupe.check(other, {"n": 2}) is not None


def test_turning_the_switch_off_lifts_a_running_cooldown() -> None:
    dedupe = Deduplicator()
    slow = tool("tickets", cooldown_s=30)
    dedupe.record(slow, {"n": 1})
    dedupe.cooldown_enabled = False
    assert dedupe.check(slow, {"n": 2}) is None


def test_switched_off_an_exact_repeat_may_run() -> None:
    """The switch governs repeats too, globally and per tool (the reference's
    MCP_NO_COOLDOWN: legitimate repeated calls)."""
    search, tickets = tool(), tool("tickets")
    for dedupe in (Deduplicator(cooldown_enabled=False),
                   Deduplicator(cooldown_overrides={"search": False, "tickets": False})):  # fmt: skip
        for t in (search, tickets):
            dedupe.record(t, {"q": "x"})
            assert dedupe.check(t, {"q": "x"}) is None
    partly = Deduplicator(cooldown_enabled=False, cooldown_overrides={"tickets": True})
    for t in (search, tickets):
        partly.record(t, {"q": "x"})
    assert partly.check(search, {"q": "x"}) is None
    assert partly.check(tickets, {"q": "x"}) is not None


def test_a_call_written_twice_in_one_list_is_one_call_where_repeats_are_refused() -> None:
    from desktop.core.messages import ToolCall

    calls = [ToolCall("c1", "search", {"q": "x", "n": 2}), ToolCall("c2", "search", {"n": 2, "q": "x"}),
             ToolCall("c3", "search", {"q": "y"})]  # fmt: skip
    assert [c.id for c in Deduplicator().merged(calls)] == ["c1", "c3"]
    assert [c.id for c in Deduplicator(cooldown_enabled=False).merged(calls)] == ["c1", "c2", "c3"]
