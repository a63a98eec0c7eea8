"""The look: named colours per theme (light, dark), the palette and the one style sheet
(`resources/styles/app.qss`, whose `@name` tokens are these colours and sizes), and the
font size. "system" follows the desktop's scheme as it changes (Qt 6's color scheme)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("system", "light", "dark")
MIN_POINTS, MAX_POINTS = 7, 28
_TOKEN = re.compile(r"@([a-z_]+)")


@dataclass(frozen=True)
class Colours:
    window: str  # the sidebar, the header, dialogs
    surface: str  # the chat
    raised: str  # the person's messages, cards
    text: str
    muted: str  # secondary text: notes, timings, the model line
    border: str
    accent: str  # focus, the current conversation, a running tool
    on_accent: str
    code: str  # code blocks
    ok: str
    warn: str
    error: str
    error_surface: str
    selection: str


LIGHT = Colours(
    window="#f4f5f7", surface="#ffffff", raised="#eef1f6", text="#1d2330", muted="#5f6776",
    border="#d9dde4", accent="#2f64d6", on_accent="#ffffff", code="#f5f6f8", ok="#2b8a3e",
    warn="#a35200", error="#c92a2a", error_surface="#fff3f3", selection="#d6e2fa",
)  # fmt: skip
DARK = Colours(
    window="#17191d", surface="#1e2026", raised="#2a2e37", text="#e6e8ec", muted="#a0a7b3",
    border="#363b46", accent="#7aa2f7", on_accent="#0f1115", code="#15171b", ok="#69db7c",
    warn="#ffa94d", error="#ff8787", error_surface="#2c1a1c", selection="#2f3d5c",
)  # fmt: skip


def is_dark(choice: str) -> bool:
    """Whether `choice` ("system", "light", "dark") means dark here and now."""
    if choice in ("light", "dark"):
        return choice == "dark"
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def palette(colours: Colours) -> QPalette:
    """The palette for widgets the style sheet does not reach (menus, dialogs, inputs)."""
    roles = QPalette.ColorRole
    p = QPalette()
    for role, colour in (
        (roles.Window, colours.window), (roles.WindowText, colours.text),
        (roles.Base, colours.surface), (roles.AlternateBase, colours.raised),
        (roles.Text, colours.text), (roles.Button, colours.raised),
        (roles.ButtonText, colours.text), (roles.Highlight, colours.accent),
        (roles.HighlightedText, colours.on_accent), (roles.PlaceholderText, colours.muted),
        (roles.ToolTipBase, colours.raised), (roles.ToolTipText, colours.text),
        (roles.Link, colours.accent), (roles.Mid, colours.border),
        (roles.Midlight, colours.border), (roles.Light, colours.surface),
        (roles.Dark, colours.border), (roles.BrightText, colours.error),
    ):  # fmt: skip
        p.setColor(role, QColor(colour))
    p.setColor(QPalette.ColorGroup.Disabled, roles.Text, QColor(colours.muted))
    p.setColor(QPalette.ColorGroup.Disabled, roles.ButtonText, QColor(colours.muted))
    p.setColor(QPalette.ColorGroup.Disabled, roles.WindowText, QColor(colours.muted))
    return p


def style_sheet(template: str, colours: Colours, points: float) -> str:
    """The template with its tokens filled: colours by name, and the type scale from the
    base size (`@pt` the base, `@pt_small`, `@pt_title`)."""
    values = {
        **asdict(colours),
        "pt": f"{points:g}pt",
        "pt_small": f"{points * 0.9:.1f}pt",
        "pt_title": f"{points * 1.3:.1f}pt",
    }
    return _TOKEN.sub(lambda m: values.get(m.group(1), m.group(0)), template)


class Appearance(QObject):
    """Applies a theme and a font size to the application, and again when the desktop's
    scheme changes while the theme is "system". Signal: changed(bool): dark or not."""

    changed = Signal(bool)

    def __init__(
        self, app: QApplication, template: Path | None, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.app = app
        self.template = (
            template.read_text(encoding="utf-8") if template and template.is_file() else ""
        )
        self.default_points = app.font().pointSizeF() if app.font().pointSizeF() > 0 else 10.0
        self.choice = "system"
        self.points = 0
        self.dark = False
        app.setStyle("Fusion")  # the palette is honoured in full on every platform
        app.styleHints().colorSchemeChanged.connect(self._scheme_changed)

    def apply(self, choice: str, points: int = 0) -> None:
        self.choice = choice if choice in THEMES else "system"
        self.points = points
        self.dark = is_dark(self.choice)
        colours = DARK if self.dark else LIGHT
        size = float(points) if points else self.default_points
        font = QFont(self.app.font())
        font.setPointSizeF(size)
        self.app.setFont(font)
        self.app.setPalette(palette(colours))
        self.app.setStyleSheet(style_sheet(self.template, colours, size))
        self.changed.emit(self.dark)

    def _scheme_changed(self, _scheme: Qt.ColorScheme) -> None:
        if self.choice == "system":
            self.apply(self.choice, self.points)

    @property
    def size(self) -> float:
        return float(self.points) if self.points else self.default_points
