"""Real, small images for tests (tool images are decoded and checked on their way)."""

from __future__ import annotations

import io


def picture(width: int = 8, height: int = 6, kind: str = "PNG", color: str = "teal") -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, kind)
    return out.getvalue()


PNG = picture()
JPEG = picture(kind="JPEG", color="orange")
