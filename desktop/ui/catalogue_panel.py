"""The Tools dialog's catalogue: the servers Loomchat can install, searchable; the chosen
one's licence, source, whether it goes online, whether its runtime is here (and how to get
it where not), and a field for each setting it needs."""

from __future__ import annotations

from html import escape
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.core.tools.mcp_catalogue import CatalogueServer, find_runtime
from desktop.ui.accessible import describe


class CataloguePanel(QGroupBox):
    def __init__(
        self, catalogue: list[CatalogueServer], problem: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__("Catalogue", parent)
        self.catalogue = catalogue
        self.installed: dict[str, str] = {}  # catalogue id -> the name it is installed as
        self.search_path: str | None = None  # the runtimes' PATH (tests set their own)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search the catalogue")
        describe(self.search, "Show the catalogue's servers whose name or description has "
                 "these words", "Search the catalogue")  # fmt: skip
        self.search.textChanged.connect(self._fill_catalogue)
        self.listing = QTreeWidget()
        self.listing.setHeaderLabels(["Server", "Runs with", "What it does"])
        self.listing.setRootIsDecorated(False)
        describe(self.listing, "The servers Loomchat can install", "Catalogue")
        self.listing.currentItemChanged.connect(self._show_entry)
        self.details = QLabel(problem)
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setOpenExternalLinks(True)
        self.form = QFormLayout()
        self.fields: dict[str, QLineEdit] = {}
        self.install_button = QPushButton("Install")
        describe(self.install_button, "Install the chosen server and start it")
        self.column = layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.listing, 3)
        layout.addWidget(self.details)
        layout.addLayout(self.form)
        self.buttons = QHBoxLayout()
        self.buttons.addWidget(self.install_button)
        layout.addLayout(self.buttons)
        self._fill_catalogue()

    def values(self) -> dict[str, str]:
        """The settings as typed, by key."""
        return {key: field.text() for key, field in self.fields.items()}

    def show_installed(self, installed: dict[str, str]) -> None:
        """Mark the catalogue's servers that are installed (catalogue id -> name)."""
        if installed != self.installed:
            self.installed = installed
            chosen = self.chosen_entry()
            self._fill_catalogue(chosen.id if chosen else None)

    def _fill_catalogue(self, keep: str | None = None) -> None:
        self.listing.clear()
        for server in self.catalogue:
            if server.matches(self.search.text()):
                runs = server.runtime + (" · online" if server.online else "")
                name = f"{server.name} ✓" if server.id in self.installed else server.name
                item = QTreeWidgetItem([name, runs, server.description])
                item.setData(0, Qt.ItemDataRole.UserRole, server.id)
                item.setToolTip(2, server.description)
                self.listing.addTopLevelItem(item)
        self.listing.resizeColumnToContents(0)
        self.listing.resizeColumnToContents(1)
        items = [self.listing.topLevelItem(i) for i in range(self.listing.topLevelItemCount())]
        shown = [i for i in items if i is not None]
        kept = [i for i in shown if i.data(0, Qt.ItemDataRole.UserRole) == keep] or shown[:1]
        if kept:
            self.listing.setCurrentItem(kept[0])
        else:
            self._show_entry()

    def chosen_entry(self) -> CatalogueServer | None:
        item = self.listing.currentItem()
        wanted = item.data(0, Qt.ItemDataRole.UserRole) if item else None
        return next((s for s in self.catalogue if s.id == wanted), None)

    def _show_entry(self, *_args: object) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.fields = {}
        server = self.chosen_entry()
        self.install_button.setEnabled(server is not None)
        if server is None:
            return
        online = "Goes online. " if server.online else "Works offline. "
        if (name := self.installed.get(server.id)) is not None:
            online += f"Installed as {escape(name)}: installing again replaces its settings. "
        runtime = find_runtime(server, self.search_path)
        self.install_button.setEnabled(runtime.ok)
        missing = (
            f"<br><b>Cannot install yet:</b> {escape(runtime.missing)}" if not runtime.ok else ""
        )
        source = escape(server.source)
        self.details.setText(
            f"<b>{escape(server.name)}</b>: {escape(server.description)}<br>{online}"
            f'Licence {escape(server.licence)}; source <a href="{source}">{source}</a>.{missing}'
        )
        for setting in server.settings:
            field = QLineEdit()
            field.setPlaceholderText("required" if setting.required else "optional")
            self.fields[setting.key] = field
            if setting.kind in ("folder", "file"):
                browse = QPushButton("Choose…")
                describe(browse, f"Choose {setting.label.lower()}")
                browse.clicked.connect(lambda _=False, f=field, k=setting.kind: self._browse(f, k))
                row = QHBoxLayout()
                row.addWidget(field, 1)
                row.addWidget(browse)
                self.form.addRow(setting.label, row)
            else:
                self.form.addRow(setting.label, field)

    def _browse(self, field: QLineEdit, kind: str) -> None:
        if kind == "folder":
            chosen = QFileDialog.getExistingDirectory(self, "Choose a folder", str(Path.home()))
        else:
            chosen, _ = QFileDialog.getSaveFileName(self, "Choose a file", str(Path.home()))
        if chosen:
            field.setText(chosen)
