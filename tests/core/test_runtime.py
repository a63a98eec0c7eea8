"""The built-in runtime: the bundled model, and llama-server started, watched and stopped."""

import hashlib
from pathlib import Path

import pytest

from desktop.core.runtime import (
    LlamaServer,
    RuntimeSetupError,
    assemble,
    find_llama_server,
)


def test_assemble_checks_the_sha256(tmp_path: Path) -> None:
    parts = []
    for i, data in enumerate([b"GGUF", b"-part-two", b"-three"]):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(data)
        parts.append(part)
    good = hashlib.sha256(b"GGUF-part-two-three").hexdigest()
    target = tmp_path / "models" / "m.gguf"
    assemble(parts, target, good)
    assert target.read_bytes() == b"GGUF-part-two-three"

    other = tmp_path / "models" / "bad.gguf"
    with pytest.raises(RuntimeSetupError, match="checksum does not match"):
        assemble(parts, other, "0" * 64)
    assert not other.exists() and not other.with_suffix(".partial").exists()


def test_binary_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("LOOMCHAT_LLAMA_SERVER", str(fake))
    assert find_llama_server() == fake
    monkeypatch.setenv("LOOMCHAT_LLAMA_SERVER", str(tmp_path / "missing"))
    assert find_llama_server() is None


def test_a_packaged_app_finds_its_own_llama_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    inside = tmp_path / "llama" / "llama-server"
    inside.parent.mkdir()
    inside.write_bytes(b"")
    monkeypatch.delenv("LOOMCHAT_LLAMA_SERVER", raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert find_llama_server() == inside


def test_a_packaged_app_without_the_bundled_model_says_to_choose_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from desktop.core import runtime

    monkeypatch.setenv("LOOMCHAT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(runtime, "_BUNDLED_MODEL_PARTS", [("loomchat_no_such_part", "x.bin")])
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(RuntimeSetupError, match="Choose a GGUF model file") as caught:
        runtime.ensure_bundled_model()
    assert "pip" not in str(caught.value)
    assert not runtime.bundled_model_available()
    runtime.bundled_model_path().parent.mkdir(parents=True)
    runtime.bundled_model_path().write_bytes(b"GGUF")
    assert runtime.bundled_model_available()


async def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    server = LlamaServer(model=tmp_path / "nope.gguf", binary=Path("/bin/true"))
    with pytest.raises(
        RuntimeSetupError, match=r"is not there \(deleted or moved\?\): choose a model"
    ):
        await server.start()


async def test_a_server_that_exits_at_once_points_to_its_log(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    log = tmp_path / "server.log"
    server = LlamaServer(model=model, binary=Path("/bin/false"), log_path=log)
    with pytest.raises(RuntimeSetupError, match=f"exited with code 1; see its log: {log}"):
        await server.start(timeout_s=10)


def test_a_model_with_a_projector_beside_it_is_started_seeing_images(tmp_path: Path) -> None:
    from desktop.core.runtime import projector_for

    binary, model = tmp_path / "llama-server", tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    server = LlamaServer(model=model, binary=binary, port=1234)
    assert "--mmproj" not in server.command()
    projector = projector_for(model)
    assert projector.name == "gemma-3-4b-it-Q4_K_M.mmproj.gguf"
    projector.write_bytes(b"GGUF")
    command = server.command()
    assert command[command.index("--mmproj") + 1] == str(projector)
