"""Settings → Tools' table: each tool, on or off, its cooldown, and whether it runs without
asking (Allow), asks each time (Ask), or is never offered (Never)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QTableWidget, QTableWidgetItem, QWidget

from desktop.core.storage.settings import Settings
from desktop.core.tools.catalog import permission
from desktop.core.tools.permissions import PERMISSIONS, permission_of
from desktop.core.tools.toolbox import Tool
from desktop.ui.accessible import describe

LABELS = {"allow": "Allow", "ask": "Ask first", "never": "Never"}


class ToolTable(QTableWidget):
    def __init__(self, tools: list[Tool], settings: Settings, parent: QWidget | None = None):
        super().__init__(len(tools), 4, parent)
        self.tools = tools
        self.settings = settings
        self.setHorizontalHeaderLabels(["Tool", "On", "Cooldown", "Runs"])
        self.verticalHeader().hide()
        describe(self, "Each tool: on or off, its cooldown, and whether it runs without "
                 "asking, asks each time, or is never offered", "Tools")  # fmt: skip
        for row, tool in enumerate(tools):
            name = QTableWidgetItem(f"{tool.name} · goes online" if tool.online else tool.name)
            name.setFlags(Qt.ItemFlag.ItemIsEnabled)
            name.setToolTip(tool.description)
            self.setItem(row, 0, name)
            self.setItem(
                row, 1, _checkbox(settings.tool_enabled(tool.name, not tool.off_by_default))
            )
            if tool.cooldown_s:
                on = settings.cooldown_overrides.get(tool.name, settings.cooldown_enabled)
                cooldown = _checkbox(on, f"{tool.cooldown_s:g} s")
            else:
                cooldown = QTableWidgetItem("none")
                cooldown.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.setItem(row, 2, cooldown)
            runs = QComboBox()
            for value in PERMISSIONS:
                runs.addItem(LABELS[value], value)
            runs.setCurrentIndex(runs.findData(permission(settings, tool)))
            describe(runs, f"Whether {tool.name} runs without asking, asks, or is never offered",
                     f"{tool.name} runs")  # fmt: skip
            self.setCellWidget(row, 3, runs)
        self.resizeColumnsToContents()
        self.horizontalHeader().setStretchLastSection(True)

    def chosen(self, row: int) -> str:
        widget = self.cellWidget(row, 3)
        return str(widget.currentData()) if isinstance(widget, QComboBox) else ""

    def values(self, cooldowns_on: bool) -> Chosen:
        """What the table says, each setting kept only where it is not as it would be
        anyway; the patterns, and rules for tools not listed, are kept as they were."""
        names = {t.name for t in self.tools}
        rules = {k: v for k, v in self.settings.tool_permissions.items() if k not in names}
        older = {k: v for k, v in self.settings.trusted_tools.items() if k not in names}
        chosen = Chosen({}, {}, rules, older)
        for row, tool in enumerate(self.tools):
            if (on := _checked(self.item(row, 1))) != (not tool.off_by_default):
                chosen.enabled[tool.name] = on
            if tool.cooldown_s and (on := _checked(self.item(row, 2))) != cooldowns_on:
                chosen.cooldowns[tool.name] = on
            runs = self.chosen(row)
            if runs != permission_of(tool, tool.needs_approval, rules):  # not what a pattern says
                rules[tool.name] = runs
            if runs == "allow" and tool.needs_approval:  # as older versions read it
                chosen.trusted[tool.name] = True
        return chosen


@dataclass(frozen=True)
class Chosen:
    enabled: dict[str, bool]
    cooldowns: dict[str, bool]
    permissions: dict[str, str]
    trusted: dict[str, bool]


def _checkbox(on: bool, text: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
    item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
    return item


def _checked(item: QTableWidgetItem | None) -> bool:
    return item is not None and item.checkState() == Qt.CheckState.Checked
