"""Tools: the MCP servers that give the model more tools. The catalogue (searchable, each
server's licence, source and whether it goes online), installed by clicks: the runtime it
needs checked, its settings asked for, written into the app's `mcpServers` file, started,
its tools listed, a calibration offered. The installed servers with their state (running
with how many tools, failed and why, off), each removable, switched off, or allowed / asked
about / never offered as a whole; servers imported from another app's file or the
clipboard, their commands shown before anything is added. Not modal: servers start in the
background."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.core.errors import UsageError
from desktop.core.session import Session
from desktop.core.tools.mcp import McpConfigError, McpServer, ServerState
from desktop.core.tools.mcp_catalogue import (
    CATALOGUE,
    McpCatalogueError,
    load_catalogue,
)
from desktop.core.tools.mcp_servers_file import (
    FILE_NAME,
    Imported,
    import_file,
    install,
    installed_from_catalogue,
    read_servers,
    remove_server,
    servers_in,
    set_disabled,
    write_servers,
)
from desktop.ui.accessible import complete, describe
from desktop.ui.catalogue_panel import CataloguePanel
from desktop.ui.controller import ChatController

# A server's tools as a whole: no rule of their own (each tool as it says), or one rule.
SERVER_RULES = {"": "Each tool as set", "allow": "Allow all", "ask": "Ask first", "never": "Never"}


def count_of_tools(count: int) -> str:
    return f"{count} tool{'s' if count != 1 else ''}"


def state_text(state: ServerState | None, disabled: bool) -> str:
    if disabled:
        return "off"
    if state is None:
        return "not started"
    match state.kind:
        case "running":
            return f"running · {count_of_tools(state.tools)}"
        case "failed":
            return f"failed: {state.reason}"
        case "starting":
            return "starting…"
        case "stopped":
            return "stopped"


class ToolsDialog(QDialog):
    def __init__(
        self,
        session: Session,
        controller: ChatController,
        parent: QWidget | None = None,
        catalogue: Path = CATALOGUE,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Tools")
        self.resize(1000, 640)
        self.session = session
        self.controller = controller
        self.just_installed: str | None = None  # said once it has started
        self.listed: dict[str, dict[str, Any]] = {}  # the servers file, as last shown
        try:
            catalogue_servers = load_catalogue(catalogue)
            problem = ""
        except McpCatalogueError as exc:
            catalogue_servers, problem = [], str(exc)
        intro = QLabel(
            "MCP servers give the model more tools. Install one from the catalogue, or import "
            "the servers another app (Claude Desktop, Cursor, VS Code) already runs. They run "
            "on this computer; those marked online reach the internet."
        )
        intro.setWordWrap(True)

        self.catalogue = CataloguePanel(catalogue_servers, problem)
        self.catalogue.install_button.clicked.connect(self._install)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.calibrate_button = QPushButton("Calibrate the model on them")
        describe(self.calibrate_button, "Measure how well the model calls the tools, "
                 "so its calls are judged fairly")  # fmt: skip
        self.calibrate_button.clicked.connect(self._calibrate)
        self.calibrate_button.hide()
        self.catalogue.buttons.addWidget(self.calibrate_button)
        self.catalogue.buttons.addStretch()
        self.catalogue.column.addWidget(self.message)

        self.installed = QTreeWidget()
        self.installed.setHeaderLabels(["Installed server", "State"])
        self.installed.setRootIsDecorated(False)
        describe(self.installed, "The MCP servers Loomchat runs, and how each is", "Installed")
        self.installed.currentItemChanged.connect(self._show_server)
        self.rule = QComboBox()
        for value, text in SERVER_RULES.items():
            self.rule.addItem(text, value)
        describe(self.rule, "Whether the chosen server's tools run without asking, ask "
                 "each time, or are never offered", "Its tools")  # fmt: skip
        self.rule.activated.connect(self._set_rule)
        self.toggle = QPushButton("Turn off")
        describe(self.toggle, "Stop the chosen server but keep it, or start it again")
        self.toggle.clicked.connect(self._toggle)
        self.remove = QPushButton("Remove")
        describe(self.remove, "Stop the chosen server and take it out of Loomchat")
        self.remove.clicked.connect(self._remove)
        self.import_from_file = QPushButton("Import from a file…")
        describe(self.import_from_file, "Add the servers of another app's mcpServers file")
        self.import_from_file.clicked.connect(self._import_file)
        self.import_clipboard = QPushButton("Import from the clipboard")
        describe(self.import_clipboard, "Add the servers of an mcpServers JSON you copied")
        self.import_clipboard.clicked.connect(self._import_clipboard)
        installed_box = QGroupBox("Installed")
        right = QVBoxLayout(installed_box)
        right.addWidget(self.installed, 1)
        self.server_details = QLabel()
        self.server_details.setWordWrap(True)
        self.server_details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        right.addWidget(self.server_details)
        rule_row = QHBoxLayout()
        rule_row.addWidget(QLabel("Its tools:"))
        rule_row.addWidget(self.rule, 1)
        right.addLayout(rule_row)
        buttons_row = QHBoxLayout()
        buttons_row.addWidget(self.toggle)
        buttons_row.addWidget(self.remove)
        right.addLayout(buttons_row)
        right.addWidget(self.import_from_file)
        right.addWidget(self.import_clipboard)

        split = QSplitter()
        split.addWidget(self.catalogue)
        split.addWidget(installed_box)
        split.setSizes([600, 400])
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(split, 1)
        layout.addWidget(close)
        complete(self)
        self.refresh()

    # --- the file and the servers ------------------------------------------------------

    def servers_file(self) -> Path | None:
        """The `mcpServers` file the app runs: the one chosen in Settings, else its own in
        the data folder (None where settings are not kept: nowhere to write)."""
        if self.session.settings.mcp_config:
            return Path(self.session.settings.mcp_config).expanduser()
        if self.session.settings_path is None:
            return None
        return self.session.settings_path.parent / FILE_NAME

    def _listed(self) -> dict[str, dict[str, Any]]:
        path = self.servers_file()
        try:
            return read_servers(path) if path is not None else {}
        except McpConfigError as exc:
            self.message.setText(str(exc))
            return {}

    def _running(self) -> dict[str, McpServer]:
        return {s.config.name: s for s in self.session.tools.mcp.servers}

    def refresh(self) -> None:
        """The installed servers and their states, the chosen one kept chosen."""
        if not shiboken6.isValid(self):
            return
        chosen = self.chosen_server()
        running = self._running()
        self.listed = self._listed()  # read once: choosing a row below shows from it
        self.installed.clear()
        for name, spec in self.listed.items():
            server = running.get(name)
            state = state_text(server.state if server else None, bool(spec.get("disabled")))
            item = QTreeWidgetItem([name, state])
            item.setData(0, Qt.ItemDataRole.UserRole, name)
            item.setToolTip(1, state)
            self.installed.addTopLevelItem(item)
            if name == chosen:
                self.installed.setCurrentItem(item)
        self.installed.resizeColumnToContents(0)
        self.catalogue.show_installed(installed_from_catalogue(self.listed))
        self._show_server()

    def chosen_server(self) -> str | None:
        item = self.installed.currentItem()
        return str(item.data(0, Qt.ItemDataRole.UserRole)) if item else None

    def _show_server(self, *_args: object) -> None:
        name = self.chosen_server()
        for control in (self.rule, self.toggle, self.remove):
            control.setEnabled(name is not None)
        if name is None:
            self.server_details.clear()
            return
        spec = self.listed.get(name, {})
        server = self._running().get(name)
        tools = [t.name.removeprefix(f"{server.prefix}__") for t in server.tools] if server else []
        said = [f"Runs: {_command(spec)}"]
        if server is not None and server.state.kind == "failed":
            said.append(server.state.reason)
        elif tools:
            said.append(f"Its tools: {', '.join(tools)}")
        self.server_details.setText("\n".join(said))
        self.toggle.setText("Turn on" if spec.get("disabled") else "Turn off")
        prefix = self._prefix(name)
        rule = self.session.settings.tool_permissions.get(f"{prefix}:*", "")
        self.rule.setCurrentIndex(max(self.rule.findData(rule), 0))

    def _prefix(self, name: str) -> str:
        server = self._running().get(name)
        return server.prefix if server else name

    def apply(self) -> None:
        """Run what the file now lists (those unchanged go on), then show the states."""
        path = self.servers_file()
        if path is not None and not self.session.settings.mcp_config:
            self.session.apply_settings(replace(self.session.settings, mcp_config=str(path)))
        self.controller.tasks.start(self._start())
        self.refresh()

    async def _start(self) -> None:
        await self.session.start_mcp()
        connection = self.session.connection
        self.session.connection = replace(connection, problems=tuple(self.session.tools.problems))
        self.controller.connection_changed.emit(self.session.connection)
        self.refresh()
        self._say_installed()

    def _install(self) -> None:
        server, path = self.catalogue.chosen_entry(), self.servers_file()
        if server is None:
            return
        if path is None:
            self.message.setText("Settings are not kept in this session: nowhere to install.")
            return
        try:
            name = install(server, self.catalogue.values(), path, self.catalogue.search_path)
        except (UsageError, OSError) as exc:
            self.message.setText(str(exc))
            return
        self.just_installed = name
        self.message.setText(f"{server.name} is installed as '{name}': starting…")
        self.apply()

    def _say_installed(self) -> None:
        name = self.just_installed
        server = self._running().get(name) if name else None
        if server is None or not shiboken6.isValid(self):
            return
        state = server.state
        if state.kind != "running":
            self.message.setText(f"'{name}' {state_text(state, False)}")
            return
        tools = ", ".join(t.name.removeprefix(f"{server.prefix}__") for t in server.tools)
        self.message.setText(f"'{name}' is running with {count_of_tools(state.tools)}: {tools}.")
        self.calibrate_button.setVisible(self.session.needs_calibration())

    def _calibrate(self) -> None:
        self.controller.calibrate()
        self.calibrate_button.hide()
        self.message.setText(self.message.text() + " Calibrating: see the status bar.")

    # --- the installed servers ---------------------------------------------------------

    def _set_rule(self) -> None:
        name = self.chosen_server()
        if name is None:
            return
        pattern = f"{self._prefix(name)}:*"
        rules = {k: v for k, v in self.session.settings.tool_permissions.items() if k != pattern}
        if chosen := str(self.rule.currentData()):
            rules[pattern] = chosen
        self.session.apply_settings(replace(self.session.settings, tool_permissions=rules))

    def _toggle(self) -> None:
        name, path = self.chosen_server(), self.servers_file()
        if name is None or path is None:
            return
        off = not self._listed().get(name, {}).get("disabled", False)
        try:
            set_disabled(path, name, off)
        except (UsageError, OSError) as exc:
            self.message.setText(str(exc))
            return
        self.apply()

    def _remove(self) -> None:
        name, path = self.chosen_server(), self.servers_file()
        if name is None or path is None:
            return
        try:
            remove_server(path, name)
        except (UsageError, OSError) as exc:
            self.message.setText(str(exc))
            return
        self.message.setText(f"'{name}' is removed.")
        self.apply()

    def _import_file(self) -> None:
        chosen, _ = QFileDialog.getOpenFileName(
            self, "Import MCP servers", str(Path.home()), "JSON files (*.json);;All files (*)"
        )
        if chosen:
            self.take_import(lambda known: import_file(Path(chosen), known))

    def _import_clipboard(self) -> None:
        text = QGuiApplication.clipboard().text()
        self.take_import(lambda known: servers_in(text, known, "the clipboard"))

    def take_import(self, read: Any, confirm: bool = True) -> None:
        """Show what an import would add (each server's command: it will run here) and,
        when the person agrees, add it."""
        path = self.servers_file()
        if path is None:
            self.message.setText("Settings are not kept in this session: nowhere to import.")
            return
        listed = self._listed()
        try:
            found: Imported = read(set(listed))
        except (UsageError, OSError) as exc:
            self.message.setText(str(exc))
            return
        lines = [f"{name}: {_command(spec)}" for name, spec in found.servers.items()]
        skipped = [f"Skipped {line}" for line in found.skipped]
        if not found.servers:
            self.message.setText("\n".join(["Nothing to import.", *skipped]))
            return
        question = "Add these servers? Each runs its command on this computer.\n\n"
        if confirm and QMessageBox.question(self, "Import MCP servers",
                                            question + "\n".join(lines + skipped)) \
                != QMessageBox.StandardButton.Yes:  # fmt: skip
            return
        try:
            write_servers(path, {**listed, **found.servers})
        except OSError as exc:
            self.message.setText(f"Cannot write {path}: {exc}")
            return
        self.message.setText("\n".join([f"Imported {', '.join(found.servers)}.", *skipped]))
        self.apply()


def _command(spec: dict[str, Any]) -> str:
    if "url" in spec:
        return str(spec["url"])
    return " ".join([str(spec.get("command", "")), *map(str, spec.get("args", []))])[:300]


def show_tools(window: Any) -> ToolsDialog:
    """The dialog over the window's session, one at a time."""
    dialog: ToolsDialog | None = window.findChild(ToolsDialog)
    if dialog is None:
        dialog = ToolsDialog(window.session, window.controller, window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    dialog.raise_()
    return dialog
