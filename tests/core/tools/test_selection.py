"""Tool selection: when the tools do not fit, a turn offers those that fit its request."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from desktop.core.messages import Message, ToolCall
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.selection import (
    MAX_TOOLS,
    SELECTED,
    ToolSelector,
    needs_selection,
    offer_for,
)
from desktop.core.tools.toolbox import Tool
from tests.support.fakes import Request, ScriptedProvider, Step


async def noop(arguments: dict[str, Any]) -> str:
    return "ok"


def tool(name: str, description: str, *parameters: str) -> Tool:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in parameters}}
    return Tool(name, description, schema, noop)


# Fifty tools of the kind ten MCP servers bring.
MANY = [
    tool("github__create_issue", "Open a new issue in a GitHub repository", "repo", "title"),
    tool("github__list_pull_requests", "List the pull requests of a repository", "repo"),
    tool("jira__transition_ticket", "Move a Jira ticket to another status", "ticket", "status"),
    tool("weather__forecast", "Weather forecast for a city, days ahead", "city", "days"),
    tool("stocks__quote", "The latest share price of a stock ticker symbol", "symbol"),
    tool("mail__send", "Send an email message to a recipient", "to", "subject", "body"),
    tool("calendar__create_event", "Create a calendar event or meeting", "title", "start"),
    tool("maps__directions", "Driving or walking directions between two places", "origin"),
    tool("translate__text", "Translate text into another language", "text", "language"),
    tool("db__query", "Run a read-only SQL query on the analytics database", "sql"),
    *[tool(f"misc__tool_{i}", f"Internal helper number {i} for the build farm", "x")
      for i in range(40)],
]  # fmt: skip


def test_all_tools_are_offered_while_they_fit() -> None:
    tools = builtin_tools(Path("/tmp"))
    assert not needs_selection(tools, 8192)
    offer = offer_for(tools, "anything", context_size=8192)
    assert offer.tools == tools and not offer.selected
    assert needs_selection(MANY, 8192) and len(MANY) > MAX_TOOLS
    # One tool that alone takes a third of 8,192 (its description is capped: its parameters)
    wordy = [tool("big", "word", *(f"parameter_number_{i}" for i in range(600)))]
    assert needs_selection(wordy, 8192) and not needs_selection(wordy, 128_000)


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("Open an issue in loomchat/loomchat titled 'Crash on start'", "github__create_issue"),
        ("What's the weather in Oslo for the next three days?", "weather__forecast"),
        ("What is Apple's share price right now?", "stocks__quote"),
        ("Email Ana that the meeting moved", "mail__send"),
        ("How do I drive from Lyon to Geneva?", "maps__directions"),
        ("Put a meeting with Bo on my calendar tomorrow at 10", "calendar__create_event"),
        ("Translate 'good morning' into Japanese", "translate__text"),
    ],
)
def test_the_tool_that_fits_the_request_is_among_the_few_offered(
    request_text: str, expected: str
) -> None:
    offer = ToolSelector(MANY).select(request_text)
    assert expected in [t.name for t in offer.tools]
    assert len(offer.tools) <= SELECTED and offer.left_out >= len(MANY) - SELECTED
    assert offer.reasons[expected].startswith("matches the request")


def test_no_tool_is_offered_for_a_request_none_fits() -> None:
    assert ToolSelector(MANY).select("Tell me a short joke about cats").tools == []


def test_pinned_and_used_tools_stay_and_the_order_is_the_toolboxs() -> None:
    offer = ToolSelector(MANY).select(
        "Weather in Oslo tomorrow?", pinned=["db__query"], used=["mail__send"]
    )
    names = [t.name for t in offer.tools]
    assert names == sorted(names, key=[t.name for t in MANY].index)  # a stable prefix
    assert offer.reasons["db__query"] == "pinned"
    assert offer.reasons["mail__send"] == "used earlier in this conversation"
    assert "weather__forecast" in names


def in_prompt(request: Request) -> list[str]:
    """The tools a request's emulated tool prompt lists."""
    system = request.messages[0].text if request.messages[0].role == "system" else ""
    return re.findall(r"^- ([A-Za-z0-9_.-]+): ", system, re.MULTILINE)


async def test_the_session_offers_a_selection_and_the_trace_says_why(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=MANY)
    provider = ScriptedProvider([
        Step(tool_calls=[ToolCall("c1", "weather__forecast", {"city": "Oslo"})]), "Rain.",
        "Sure.",
    ])  # fmt: skip
    session.use_provider(provider)
    chat = store.create_conversation()
    [e async for e in session.send(chat, "What will the weather be in Oslo?")]
    offered = in_prompt(provider.requests[0])  # the emulated track: tools in the prompt
    assert "weather__forecast" in offered and len(offered) < 10
    assert in_prompt(provider.requests[1]) == offered  # the same on every step of the turn
    trace = session.traces[chat][-1]
    assert trace.offer is not None and trace.offer["left_out"] == len(MANY) - len(offered)
    # The next turn keeps the tool it used, whatever the request.
    [e async for e in session.send(chat, "Thanks! And send Ana an email about it.")]
    assert {"weather__forecast", "mail__send"} <= set(in_prompt(provider.requests[2]))
    session.settings = Settings(tool_selection="off")
    assert len(session.offer([], "anything").tools) == len(MANY)
    store.close()


def test_old_settings_files_still_load(tmp_path: Path) -> None:
    """Two new keys, with defaults: a file written before them opens as it did."""
    from desktop.core.storage.settings import load_settings

    path = tmp_path / "settings.json"
    path.write_text('{"backend": "ollama", "max_tool_calls": 4}')
    settings = load_settings(path)
    assert settings.tool_selection == "auto" and settings.pinned_tools == {}
    assert Message.user("x").text == "x"


def test_a_huge_description_from_a_server_is_indexed_in_part_and_fast() -> None:
    import time

    hostile = [*MANY, tool("evil__tool", "weather " * 1_000_000, *[f"p{i}" for i in range(5000)])]
    endless = {"type": "string", "enum": [f"weather {i}" for i in range(100_000)]}
    hostile.append(Tool("evil__enum", "x", {"type": "object", "properties": {"e": endless}}, noop))
    started = time.perf_counter()
    offer = ToolSelector(hostile).select("What's the weather in Oslo for the next three days?")
    assert time.perf_counter() - started < 2
    assert "weather__forecast" in [t.name for t in offer.tools]


def test_the_values_a_parameter_takes_are_matched_too() -> None:
    history = Tool(
        "us_history__event_info",
        "Retrieve information about an event in U.S. history",
        {
            "type": "object",
            "properties": {
                "event": {"type": "string"},
                "aspect": {"type": "string", "enum": ["Start Date", "Participants"]},
                "sources": {"type": "array", "items": {"enum": ["archives", "newspapers"]}},
            },
        },
        noop,
    )
    selector = ToolSelector([*MANY, history])
    for request in ("When did the Civil War start? The date, please", "Search old newspapers"):
        assert "us_history__event_info" in [t.name for t in selector.select(request).tools]
