import io

import pytest
from PIL import Image as Pillow

from desktop.core.tools.images import ImageError, fit_image
from tests.support.images import picture


def size_of(data: bytes) -> tuple[int, int]:
    return Pillow.open(io.BytesIO(data)).size


def test_small_png_and_jpeg_pass_unchanged() -> None:
    png, jpeg = picture(), picture(kind="JPEG")
    assert fit_image(png).data == png and fit_image(png).mime == "image/png"
    assert fit_image(jpeg).data == jpeg and fit_image(jpeg).mime == "image/jpeg"


@pytest.mark.parametrize("kind", ["BMP", "GIF", "WEBP", "TIFF"])
def test_other_formats_are_converted(kind: str) -> None:
    image = fit_image(picture(20, 10, kind))
    assert image.mime in ("image/png", "image/jpeg") and size_of(image.data) == (20, 10)


def test_large_images_are_downscaled_keeping_the_aspect() -> None:
    image = fit_image(picture(4000, 1000))
    assert size_of(image.data) == (1568, 392)


def test_a_multi_megabyte_photo_fits_the_byte_limit() -> None:
    import os

    noise = Pillow.frombytes("RGB", (1500, 1500), os.urandom(1500 * 1500 * 3))
    out = io.BytesIO()
    noise.save(out, "PNG")
    assert len(out.getvalue()) > 4 * 1024 * 1024
    image = fit_image(out.getvalue())
    assert image.mime == "image/jpeg" and len(image.data) <= 4 * 1024 * 1024


def test_svg_and_garbage_are_refused() -> None:
    """Edge case 41: SVG is not sent as an image."""
    with pytest.raises(ImageError, match="not an image"):
        fit_image(b'<svg xmlns="http://www.w3.org/2000/svg"/>')
