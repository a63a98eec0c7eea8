"""Images for models: converted to PNG or JPEG (what every vision API takes) and kept to a
sane size, so a 12-megapixel photo does not become a 20 MB request."""

from __future__ import annotations

import io
import warnings

from desktop.core.errors import ToolError
from desktop.core.messages import Image

MAX_SIDE = 1568  # px; vision models downscale beyond this anyway
MAX_BYTES = 4 * 1024 * 1024
# Larger pictures are refused before they are decoded: a small file can unpack to
# gigabytes (a "decompression bomb"). 50 megapixels is more than any camera photo here.
MAX_PIXELS = 50_000_000
# The only formats untrusted bytes are decoded as, whatever their name says. Pillow would
# otherwise try every format it knows, PostScript among them, which it hands to the
# system's Ghostscript: a file named photo.png would run a program.
RASTER_FORMATS = ("PNG", "JPEG", "GIF", "BMP", "WEBP", "TIFF")


class ImageError(ToolError, ValueError):
    pass


def fit_image(data: bytes, max_side: int = MAX_SIDE, max_bytes: int = MAX_BYTES) -> Image:
    """PNG or JPEG bytes within the limits; other formats (BMP, GIF, WebP, TIFF) converted.

    Raises `ImageError` for data that is not an image Pillow can read (SVG, for one)."""
    from PIL import Image as Pillow

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Pillow.DecompressionBombWarning)
            picture = Pillow.open(io.BytesIO(data), formats=RASTER_FORMATS)
            width, height = picture.size
            if width * height > MAX_PIXELS:
                raise ImageError(
                    f"the image is {width}×{height} pixels; images over "
                    f"{MAX_PIXELS // 1_000_000} megapixels are not read"
                )
            picture.load()
    except ImageError:
        raise
    except Exception as exc:  # Pillow's many ways to say "not an image I can read"
        raise ImageError(f"not an image that can be shown to a model ({exc})") from None
    fits = max(picture.size) <= max_side and len(data) <= max_bytes
    if fits and picture.format in ("PNG", "JPEG"):
        return Image(data, "image/png" if picture.format == "PNG" else "image/jpeg")
    if max(picture.size) > max_side:
        picture.thumbnail((max_side, max_side))
    has_alpha = (
        picture.mode in ("RGBA", "LA", "P") and "transparency" in picture.info
    ) or picture.mode in ("RGBA", "LA")
    out = io.BytesIO()
    if has_alpha or picture.format in ("PNG", "GIF", "BMP"):
        picture.save(out, "PNG", optimize=True)
        mime = "image/png"
        if out.tell() <= max_bytes:
            return Image(out.getvalue(), mime)
        out = io.BytesIO()
    picture.convert("RGB").save(out, "JPEG", quality=85)
    if out.tell() > max_bytes:
        raise ImageError(f"the image is larger than {max_bytes // 1024 // 1024} MB even as JPEG")
    return Image(out.getvalue(), "image/jpeg")
