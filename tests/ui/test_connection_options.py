"""Settings → Backend's options for a server elsewhere: folded until opened, read into the
settings, and a certificate file or header that cannot be used said where it was typed,
the dialog kept open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trustme
from PySide6.QtWidgets import QDialog

from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from desktop.ui.settings_dialog import SettingsDialog


def test_the_options_fold_read_and_refuse_what_cannot_be_used(qtbot: Any, tmp_path: Path) -> None:
    dialog = SettingsDialog(Settings(backend="vllm"), [], SecretStore())
    qtbot.addWidget(dialog)
    dialog.show()
    options = dialog.connection_options
    assert not options.isChecked() and not options.ca_file.isVisible()
    options.setChecked(True)
    assert options.ca_file.isVisible()
    options.ca_file.setText(str(tmp_path / "missing.pem"))
    options.headers.setPlainText("X-Team: blue\nnot a header line\nX-Key:  k-1 ")
    options.proxy.setEditText("http://10.0.0.5:3128")
    dialog.accept()
    assert dialog.isVisible()  # kept open: the CA file cannot be read
    assert "certificate files cannot be used" in options.problem.text()
    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca))
    options.ca_file.setText(str(ca))
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    chosen = dialog.settings()
    assert chosen.ca_file == str(ca) and chosen.proxy == "http://10.0.0.5:3128"
    assert chosen.headers == {"X-Team": "blue", "X-Key": "k-1"}


def test_folded_options_leave_the_settings_plain(qtbot: Any) -> None:
    before = Settings(backend="vllm", ca_file="/etc/ca.pem", proxy="system")
    dialog = SettingsDialog(before, [], SecretStore())
    qtbot.addWidget(dialog)
    assert dialog.connection_options.isChecked()  # set before: shown open
    assert dialog.connection_options.proxy.currentData() == "system"
    assert dialog.settings().proxy == "system"
    dialog.connection_options.setChecked(False)
    after = dialog.settings()
    assert (after.ca_file, after.proxy, after.headers) == ("", "", {})
