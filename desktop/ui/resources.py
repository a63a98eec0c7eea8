"""Where the app's resources (icons, the style sheet) are: beside the code in a checkout,
inside the bundle in the packaged app."""

from __future__ import annotations

import sys
from pathlib import Path

RESOURCES = Path(__file__).resolve().parent.parent.parent / "resources"


def resource(*parts: str) -> Path:
    bundled = Path(getattr(sys, "_MEIPASS", "")) / "resources"  # inside a PyInstaller bundle
    base = bundled if bundled.is_dir() else RESOURCES
    return base.joinpath(*parts)
