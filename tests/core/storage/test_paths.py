"""One data folder, chosen or damaged."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from desktop.core.storage import paths
from desktop.core.storage.chats import ChatStore, set_aside
from desktop.core.storage.paths import DataFolderError, check_writable, data_dir, remember_data_dir


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LOOMCHAT_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


def unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write to, root or not (root ignores permissions)."""
    if os.geteuid() == 0:
        return Path("/proc/self/fdinfo")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG paths")
def test_chats_settings_and_models_share_one_folder(homes: Path) -> None:
    from desktop.core.runtime import bundled_model_path

    assert data_dir() == homes / "data" / "Loomchat"
    assert bundled_model_path().parent == homes / "data" / "Loomchat" / "models"


def test_the_environment_then_the_chosen_folder_then_the_default(
    homes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert remember_data_dir(homes / "elsewhere")
    assert data_dir() == homes / "elsewhere"
    monkeypatch.setenv("LOOMCHAT_DATA_DIR", str(homes / "env"))
    assert data_dir() == homes / "env"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG paths")
def test_the_bundled_model_moves_from_the_old_lower_case_folder(homes: Path) -> None:
    from desktop.core.runtime import BUNDLED_MODEL_NAME, ensure_bundled_model

    old = homes / "data" / "loomchat" / "models" / BUNDLED_MODEL_NAME
    old.parent.mkdir(parents=True)
    old.write_bytes(b"GGUF model bytes")
    moved = ensure_bundled_model()
    assert moved == homes / "data" / "Loomchat" / "models" / BUNDLED_MODEL_NAME
    assert moved.read_bytes() == b"GGUF model bytes" and not old.exists()


def test_an_unwritable_folder_is_said_plainly(tmp_path: Path) -> None:
    folder = unwritable(tmp_path)
    with pytest.raises(DataFolderError, match="cannot write to its data folder") as caught:
        check_writable(folder)
    assert caught.value.damaged is None


@pytest.mark.parametrize(
    "content",
    [os.urandom(4096), b"SQLite format 3\x00" + os.urandom(4080), b"\x00" * 100],
    ids=["random bytes", "a valid header then garbage", "zeros"],
)
def test_a_damaged_chat_history_is_named_and_can_be_set_aside(
    tmp_path: Path, content: bytes
) -> None:
    db = tmp_path / "chats.db"
    db.write_bytes(content)
    with pytest.raises(DataFolderError, match="is damaged") as caught:
        ChatStore(db)
    assert caught.value.damaged == db
    kept = set_aside(db)
    assert kept.read_bytes() == content and kept.name.startswith("chats.db.damaged-")
    store = ChatStore(db)  # a fresh history
    assert store.conversations() == []


def test_a_chat_history_that_is_a_folder_cannot_be_opened(tmp_path: Path) -> None:
    (tmp_path / "chats.db").mkdir()
    with pytest.raises(DataFolderError, match="cannot be opened") as caught:
        ChatStore(tmp_path / "chats.db")
    assert caught.value.damaged is None


def test_paths_module_holds_the_one_data_dir() -> None:
    import desktop.core.runtime as runtime

    assert runtime.data_dir is paths.data_dir  # type: ignore[attr-defined]


def test_tests_never_touch_the_users_configuration() -> None:
    from desktop.core.storage.paths import chosen_data_dir_file

    assert not str(chosen_data_dir_file()).startswith(str(Path.home() / ".config"))
