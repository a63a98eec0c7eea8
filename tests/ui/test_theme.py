"""The look: both themes fill every token of the style sheet, the palette follows the
theme, the choice and the text size are kept in the settings, charts match the window."""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from desktop.core.storage.settings import load_settings
from desktop.ui.resources import resource
from desktop.ui.theme import DARK, LIGHT, Colours, style_sheet
from tests.ui.conftest import WindowFactory


@pytest.mark.parametrize("colours", [LIGHT, DARK])
def test_every_token_of_the_style_sheet_is_filled(colours: Colours) -> None:
    template = resource("styles", "app.qss").read_text(encoding="utf-8")
    used = set(re.findall(r"@([a-z_]+)", template))
    assert used <= {f.name for f in fields(Colours)} | {"pt", "pt_small", "pt_title"}
    filled = style_sheet(template, colours, 11)
    assert "@" not in filled and "font-size: 11pt" in filled and "14.3pt" in filled


def luminance(colour: str) -> float:
    return QColor(colour).lightnessF()


def test_each_theme_reads_dark_on_light_or_light_on_dark() -> None:
    for colours, dark in ((LIGHT, False), (DARK, True)):
        for surface in (colours.surface, colours.window, colours.raised, colours.code):
            for text in (colours.text, colours.muted):
                contrast = luminance(text) - luminance(surface)
                assert (contrast < -0.35) if not dark else (contrast > 0.35), (surface, text)


def test_the_theme_is_chosen_applied_and_kept(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window([])
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    window.set_theme("dark")
    assert app.palette().color(QPalette.ColorRole.Base).name() == DARK.surface
    assert DARK.raised in app.styleSheet() and window.session.tools.dark
    assert window.session.settings_path is not None
    assert load_settings(window.session.settings_path).theme == "dark"
    window.set_theme("light")
    assert app.palette().color(QPalette.ColorRole.Base).name() == LIGHT.surface
    assert not window.session.tools.dark


def test_text_size_steps_up_and_down_and_back(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window([])
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    base = window.appearance.size
    window.zoom(1)
    window.zoom(1)
    assert window.appearance.size == round(base) + 2 == app.font().pointSizeF()
    assert window.session.settings.font_size == round(base) + 2
    assert f"font-size: {round(base) + 2}pt" in app.styleSheet()
    window.zoom(0)
    assert window.appearance.size == base and window.session.settings.font_size == 0
    for _ in range(40):
        window.zoom(-1)
    assert window.appearance.size == 7  # never unreadably small


async def test_charts_are_drawn_for_the_window_they_go_to() -> None:
    from PySide6.QtGui import QImage

    from desktop.core.tools.builtin.charts import chart_tool

    arguments = {"type": "bar", "title": "T", "labels": ["a", "b"], "values": [1, 2]}
    corners = []
    for dark in (False, True):
        output = await chart_tool(dark).handler(arguments)
        image = QImage.fromData(output.images[0].data)
        corners.append(image.pixelColor(2, 2).lightnessF())
    assert corners[0] > 0.9 and corners[1] < 0.2
