"""API keys and tokens: in the OS keychain through `keyring`, never in the settings file.

Where no keychain works (a headless Linux box, a locked keyring), a key is kept for this
session only and the user is told; they may opt in to a local file, clearly named as
plain text, readable by them alone. keyring calls can block (an unlock prompt), so the GUI
runs them off its thread.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import keyring
from keyring.backends import chainer, fail
from keyring.errors import KeyringError, PasswordDeleteError

SERVICE = "loomchat"


def keychain_available() -> tuple[bool, str]:
    """Whether a real keychain is there, and a sentence for the settings page."""
    backend = keyring.get_keyring()
    backends = backend.backends if isinstance(backend, chainer.ChainerBackend) else [backend]
    real = [
        b
        for b in backends
        if not isinstance(b, fail.Keyring)
        and not type(b).__module__.startswith(("keyrings.alt", "keyring.backends.null"))
    ]
    if not real:
        return False, (
            "No system keychain is available (such as GNOME Keyring, KWallet, the macOS "
            "Keychain or the Windows Credential Manager)."
        )
    return True, "Keys are kept in the system keychain (" + ", ".join(
        type(b).__name__ for b in real
    ) + ")."


SECRETS_FILE = "secrets.json"


@dataclass
class SecretStore:
    """`file` is the opt-in plain-text fallback; None means keychain or session only."""

    file: Path | None = None
    _session: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_folder(cls, folder: Path, in_file: bool) -> SecretStore:
        """The keys as the app keeps them for the data `folder` (`in_file`: the settings'
        opt-in to the plain-text file there)."""
        return cls(file=folder / SECRETS_FILE if in_file else None)

    def set(self, name: str, value: str) -> str:
        """Store a key; returns where it went, as a sentence for the user."""
        ok, why = keychain_available()
        if ok:
            try:
                keyring.set_password(SERVICE, name, value)
                self._session.pop(name, None)
                return "Saved in the system keychain."
            except KeyringError as exc:
                why = f"The system keychain refused it ({type(exc).__name__})."
        if self.file is not None:
            self._write_file({**self._read_file(), name: value})
            return f"Saved in {self.file} (plain text, readable only by you). {why}"
        self._session[name] = value
        return f"Kept until you close Loomchat. {why}"

    def get(self, name: str) -> str | None:
        try:
            value = keyring.get_password(SERVICE, name)
        except KeyringError:
            value = None
        if value is not None:
            return value
        if name in self._session:
            return self._session[name]
        return self._read_file().get(name) if self.file is not None else None

    def delete(self, name: str) -> None:
        with contextlib.suppress(PasswordDeleteError, KeyringError):
            keyring.delete_password(SERVICE, name)
        self._session.pop(name, None)
        if self.file is not None:
            stored = self._read_file()
            if stored.pop(name, None) is not None:
                self._write_file(stored)

    def _read_file(self) -> dict[str, str]:
        assert self.file is not None
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write_file(self, data: dict[str, str]) -> None:
        assert self.file is not None
        self.file.parent.mkdir(parents=True, exist_ok=True)
        partial = self.file.with_suffix(".tmp")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(partial, self.file)
