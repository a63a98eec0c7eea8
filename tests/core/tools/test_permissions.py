"""Allow, Ask or Never per tool and per pattern, and what older settings files said."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.core.storage.settings import Settings
from desktop.core.tools.catalog import ToolCatalog, permission, remembered, trusted
from desktop.core.tools.toolbox import Tool


async def _nothing(_arguments: dict[str, Any]) -> str:
    return ""


def tool(name: str, needs_approval: bool) -> Tool:
    return Tool(name, "", {"type": "object"}, _nothing, needs_approval=needs_approval)


def test_a_tools_own_rule_then_the_longest_pattern_then_the_default() -> None:
    write, read = tool("files__write", True), tool("files__read", False)
    other = tool("web__fetch", True)
    assert [permission(Settings(), t) for t in (write, read, other)] == ["ask", "allow", "ask"]
    rules = {"files:*": "never", "files:read": "allow", "*": "allow"}
    settings = Settings(tool_permissions=rules)
    assert permission(settings, write) == "never"  # files:* is longer than *
    assert permission(settings, read) == "allow"  # its own rule wins
    assert permission(settings, other) == "allow"
    # An older file's "always allow" still allows; a rule of its own overrides it.
    older = Settings(trusted_tools={"web__fetch": True})
    assert trusted(older, other)
    assert not trusted(Settings(trusted_tools={"web__fetch": True},
                                tool_permissions={"web__fetch": "ask"}), other)  # fmt: skip


def test_never_is_not_offered_and_an_approval_is_remembered() -> None:
    catalog = ToolCatalog([tool("calculator", False), tool("files__write", True)])
    catalog.collect(Settings())
    assert catalog.toolbox(Settings()).names == ["calculator", "files__write"]
    never = remembered(Settings(), catalog.all[1], "never")
    assert never.tool_permissions == {"files__write": "never"}
    assert catalog.toolbox(never).names == ["calculator"]
    always = remembered(never, catalog.all[1], "always")
    assert always.tool_permissions == {"files__write": "allow"}
    assert always.trusted_tools == {"files__write": True}  # as older versions read it
    assert trusted(always, catalog.all[1])


def test_an_older_settings_file_loads_unchanged(tmp_path: Any) -> None:
    import json

    from desktop.core.storage.settings import SettingsError, load_settings

    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"backend": "auto", "trusted_tools": {"write_file": True}}))
    loaded = load_settings(path)
    assert loaded.tool_permissions == {} and loaded.trusted_tools == {"write_file": True}
    path.write_text(json.dumps({"tool_permissions": {"x": "sometimes"}}))
    with pytest.raises(SettingsError, match="sometimes"):
        load_settings(path)
