"""run_python: off until turned on, asks first, and answers with what the program printed
(and the images it saved), quoted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from desktop.core.messages import ToolCall
from desktop.core.storage.settings import Settings
from desktop.core.tools.builtin.python_runner import NAME, run_python_tool
from desktop.core.tools.catalog import ToolCatalog
from desktop.core.tools.toolbox import Toolbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux fences")


def test_it_is_offered_only_once_turned_on() -> None:
    catalog = ToolCatalog()
    catalog.collect(Settings())
    assert NAME in {t.name for t in catalog.all}  # listed in Settings → Tools
    assert NAME not in catalog.toolbox(Settings()).names
    on = Settings(tools_enabled={NAME: True})
    assert NAME in catalog.toolbox(on).names
    tool = catalog.toolbox(on).get(NAME)
    assert tool is not None and tool.needs_approval


async def test_the_standard_deviation_with_a_program_and_its_output(tmp_path: Path) -> None:
    tool = run_python_tool(tmp_path)
    example = tool.examples[0]
    outcome = await Toolbox([tool]).run(ToolCall("c1", NAME, dict(example.arguments)))
    assert outcome.error is None
    assert outcome.content.startswith("exit code 0\noutput:\n")
    assert "2.138089935299395" in outcome.content


async def test_a_failing_program_says_so_and_a_chart_comes_back() -> None:
    box = Toolbox([run_python_tool()])
    failed = await box.run(ToolCall("c1", NAME, {"code": "1 / 0"}))
    assert "exit code 1" in failed.content and "ZeroDivisionError" in failed.content
    silent = await box.run(ToolCall("c2", NAME, {"code": "x = 2"}))
    assert "printed nothing" in silent.content
    code = "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5])\nplt.savefig('c.png')"
    drawn = await box.run(ToolCall("c3", NAME, {"code": code}))
    assert len(drawn.images) == 1 and "1 image(s)" in drawn.content
