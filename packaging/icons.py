"""Render the app icon (resources/icons/loomchat.svg) for each platform's installer.

    python packaging/icons.py OUT_DIR     # loomchat.png (256), loomchat.ico, loomchat.icns

Qt draws the SVG (offscreen), Pillow writes the Windows and macOS formats.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PIL import Image
from PySide6.QtCore import QBuffer, QIODevice
from PySide6.QtGui import QGuiApplication, QIcon

SVG = Path(__file__).resolve().parent.parent / "resources" / "icons" / "loomchat.svg"


def render(size: int) -> Image.Image:
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not QIcon(str(SVG)).pixmap(size, size).save(buffer, "PNG"):
        raise SystemExit(f"could not render {SVG} at {size} px")
    return Image.open(io.BytesIO(bytes(buffer.data()))).convert("RGBA")


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    _app = QGuiApplication([])
    large = render(1024)
    render(256).save(out / "loomchat.png")
    large.save(out / "loomchat.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
    large.save(out / "loomchat.icns")
    print(*(str(out / f"loomchat.{ext}") for ext in ("png", "ico", "icns")))


if __name__ == "__main__":
    main()
