"""Screenshots of the tools: the Tools dialog (the catalogue with a server chosen, and an
installed one running: the test suite's own MCP server, imported as another app's file would
be), and the code runner answering a question in a chat with the bundled model.

    xvfb-run -a -s "-screen 0 1400x900x24" .venv/bin/python -m scripts.screenshot_tools [--out DIR]

Saves `tools.png` and `code-runner.png`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from scripts.screenshot import real_app, shots_main, wait_for

ROOT = Path(__file__).resolve().parent.parent
QUESTION = (
    "What is the standard deviation of these numbers: 2, 4, 4, 4, 5, 5, 7, 9? "
    "Work it out with a Python program."
)


async def shoot_tools(out: Path) -> None:
    from desktop.ui.tools_dialog import ToolsDialog

    out.mkdir(parents=True, exist_ok=True)
    server = ROOT / "tests" / "support" / "mcp_server.py"
    async with real_app(
        show_inspector=False,
        # the code runner alone: the shot is of its card, not of the model choosing
        tools_enabled={
            "run_python": True,
            "calculator": False,
            "create_chart": False,
            "current_time": False,
        },
        tool_permissions={"run_python": "allow"},
    ) as (window, controller, session):
        window.resize(1280, 820)
        window.show()
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        window.open_tools()
        dialog = window.findChild(ToolsDialog)
        dialog.resize(1200, 680)
        text = json.dumps({"mcpServers": {"demo": {"command": sys.executable,
                                                   "args": [str(server)]}}})  # fmt: skip
        from desktop.core.tools.mcp_servers_file import servers_in

        dialog.take_import(lambda known: servers_in(text, known), confirm=False)
        await wait_for(lambda: "running" in dialog.installed.topLevelItem(0).text(1), 60, "demo")
        dialog.installed.setCurrentItem(dialog.installed.topLevelItem(0))
        listing = dialog.catalogue.listing
        for row in range(listing.topLevelItemCount()):
            if listing.topLevelItem(row).text(0) == "Git":
                listing.setCurrentItem(listing.topLevelItem(row))
        await asyncio.sleep(0.5)
        dialog.grab().save(str(out / "tools.png"))
        dialog.remove.click()  # the chat's shot is of the code runner alone
        await wait_for(lambda: session.tools.mcp.servers == [], 30, "the demo to stop")
        dialog.close()

        controller.calibrate_on_first_use = False
        window.pane.composer.setPlainText(QUESTION)
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 400, "the answer")
        cards = window.pane.chat.cards
        runs = [card for card in cards.values() if card.name == "run_python"]
        if runs:  # the program and its output in view
            window.pane.chat.ensureWidgetVisible(runs[0], 0, 0)
        await asyncio.sleep(0.5)
        window.grab().save(str(out / "code-runner.png"))
        print("cards:", {k: (c.name, c.state) for k, c in cards.items()})
        print(f"saved {out / 'tools.png'} and {out / 'code-runner.png'}")
        await session.tools.mcp.close()


def main() -> int:
    return shots_main(__doc__, shoot_tools)


if __name__ == "__main__":
    sys.exit(main())
