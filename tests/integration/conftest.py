"""Tests against the real llama-server and the bundled model: all marked `server` here,
skipped where the server is absent unless LOOMCHAT_REQUIRE_SERVER=1 (CI sets it). Under
pytest-xdist they all run in one worker, which starts the shared server once: a second
server would compete for the cores it runs on (llama.cpp slows many times over)."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.server)
            item.add_marker(pytest.mark.xdist_group("llama-server"))
