"""Screenshots of several saved servers: Settings → Backend with the saved servers (a GPU
box chosen: its address, headers and certificate authority), and a conversation that talks
to the laptop's built-in model, its header's server menu showing the choice.

    xvfb-run -a -s "-screen 0 1400x900x24" \
        .venv/bin/python -m scripts.screenshot_servers [--out DIR]

Saves `servers-settings.png` and `servers-chat.png`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from scripts.screenshot import real_app, shots_main, wait_for

GPU_BOX = {
    "backend": "vllm", "url": "https://gpu-box.lan:8000", "model": "Qwen/Qwen2.5-7B-Instruct",
    "track": "emulated", "context_size": 16384, "runtime_model": "",
    "ca_file": "/etc/ssl/home-ca.pem", "client_cert": "", "client_key": "",
    "headers": {"X-Api-Gateway": "team-blue"}, "proxy": "",
}  # fmt: skip


async def shoot_servers(out: Path) -> None:
    from dataclasses import replace

    from desktop.core.storage.servers import connection_of, saved_as
    from desktop.ui.settings_dialog import SettingsDialog

    out.mkdir(parents=True, exist_ok=True)
    async with real_app(show_inspector=False) as (window, controller, session):
        window.resize(1280, 820)
        window.show()
        settings = saved_as(session.settings, "Laptop")
        servers = {**settings.servers, "GPU box": GPU_BOX}
        session.apply_settings(replace(settings, servers=servers))
        controller.reconnect()
        await wait_for(lambda: session.connection.ok, 60, "the connection")
        assert connection_of(session.settings)["url"] == settings.url

        dialog = SettingsDialog(session.settings, session.tools.all, session.secrets, window)
        dialog.resize(640, 760)
        row = dialog.saved_servers
        row.combo.setCurrentIndex(row.combo.findData("GPU box"))
        row.combo.activated.emit(row.combo.currentIndex())
        dialog.show()
        await asyncio.sleep(0.5)
        dialog.grab().save(str(out / "servers-settings.png"))
        dialog.reject()

        controller.calibrate_on_first_use = False
        window.new_conversation()
        window.pane.choose_server("Laptop")
        window.pane.show_header()
        window.pane.composer.setPlainText("In one sentence: why run a model on your own computer?")
        window.pane.send()
        await wait_for(lambda: controller.busy, 10, "the turn to start")
        await wait_for(lambda: not controller.busy, 300, "the answer")
        await asyncio.sleep(0.5)
        window.grab().save(str(out / "servers-chat.png"))
        print(f"saved {out / 'servers-settings.png'} and {out / 'servers-chat.png'}")


def main() -> int:
    return shots_main(__doc__, shoot_servers)


if __name__ == "__main__":
    sys.exit(main())
