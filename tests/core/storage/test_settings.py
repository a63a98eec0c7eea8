"""Settings on disk, and keys in the keychain (a test keyring backend), never in the file."""

import json
import stat
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordDeleteError

from desktop.core.storage.keychain import SERVICE, SecretStore, keychain_available
from desktop.core.storage.settings import Settings, SettingsError, load_settings, save_settings


class MemoryKeyring(KeyringBackend):
    priority = -1  # never chosen by keyring's auto-detection: only where a test sets it

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        try:
            del self.store[(service, username)]
        except KeyError:
            raise PasswordDeleteError(username) from None


class LockedKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise KeyringLocked("Failed to unlock the collection!")


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def test_defaults_when_there_is_no_file(tmp_path: Path) -> None:
    assert load_settings(tmp_path / "settings.json") == Settings()


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    settings = Settings(backend="ollama", url="http://127.0.0.1:11434", model="qwen3:4b", track="auto",
                        max_tool_calls=4, cooldown_enabled=False, cooldown_overrides={"tickets": True},
                        tools_enabled={"calculator": False}, context_size=16384, temperature=0.2)  # fmt: skip
    save_settings(settings, path)
    assert load_settings(path) == settings
    assert not settings.tool_enabled("calculator") and settings.tool_enabled("create_chart")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"max_tool_calls": 0}', "max_tool_calls: 0 is less than the minimum of 1"),
        ('{"track": "turbo"}', "track: 'turbo' is not one of"),
    ],
)
def test_an_invalid_file_says_what_is_wrong(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(content)
    with pytest.raises(SettingsError, match=message):
        load_settings(path)


def test_unknown_keys_from_a_newer_version_are_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({**asdict(Settings()), "future_option": 1, "model": "m"}))
    assert load_settings(path).model == "m"


def test_the_api_key_goes_to_the_keychain_not_the_settings_file(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    path = tmp_path / "settings.json"
    secrets = SecretStore()
    where = secrets.set("lmstudio", "sk-very-secret")
    save_settings(Settings(backend="lmstudio"), path)
    assert where == "Saved in the system keychain."
    assert memory_keyring.store[(SERVICE, "lmstudio")] == "sk-very-secret"
    assert "sk-very-secret" not in path.read_text()
    assert SecretStore().get("lmstudio") == "sk-very-secret"
    secrets.delete("lmstudio")
    assert secrets.get("lmstudio") is None


def test_without_a_keychain_the_key_lives_for_the_session_only(tmp_path: Path) -> None:
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    try:
        assert keychain_available()[0] is False
        secrets = SecretStore()
        where = secrets.set("koboldcpp", "pw")
        assert where.startswith("Kept until you close Loomchat.")
        assert secrets.get("koboldcpp") == "pw"
        assert SecretStore().get("koboldcpp") is None  # a new session has lost it

        opted_in = SecretStore(file=tmp_path / "secrets.json")
        assert "plain text, readable only by you" in opted_in.set("koboldcpp", "pw")
        assert SecretStore(file=tmp_path / "secrets.json").get("koboldcpp") == "pw"
        assert stat.S_IMODE((tmp_path / "secrets.json").stat().st_mode) == 0o600
    finally:
        keyring.set_keyring(previous)


def test_a_locked_keychain_falls_back_with_the_reason() -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(LockedKeyring())
    try:
        where = SecretStore().set("lmstudio", "tok")
        assert "refused it (KeyringLocked)" in where
    finally:
        keyring.set_keyring(previous)
