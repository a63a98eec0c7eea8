"""The GGUF files in models/: their headers read with gguf (and kept), delete, import."""

import asyncio
import os
from pathlib import Path

import gguf
import pytest

from desktop.core.models.library import (
    DEFAULT_TEMPERATURE,
    INDEX,
    LibraryError,
    delete_model,
    import_model,
    local_models,
    mark_used,
    server_temperature,
)


def tiny_gguf(
    path: Path, architecture: str = "llama", pooling: bool = False, temperature: float | None = None
) -> Path:
    """A real GGUF file, written with gguf's own writer: a header and one small tensor
    (`pooling`: the header says how an embedding model pools its tokens; `temperature`:
    the file names its own)."""
    import numpy as np

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("Tiny Test")
    if pooling:
        writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_context_length(4096)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_chat_template("{{ messages }}")
    if temperature is not None:
        writer.add_sampling_temp(temperature)
    writer.add_tensor("t", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


async def test_headers_are_read_and_kept(tmp_path: Path) -> None:
    tiny_gguf(tmp_path / "tiny.gguf")
    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    (tmp_path / "half.gguf.part").write_bytes(b"x")  # a download still going: not listed
    models = {m.name: m for m in await local_models(tmp_path)}
    assert set(models) == {"tiny.gguf", "broken.gguf"}
    tiny = models["tiny.gguf"].header
    assert (tiny.name, tiny.architecture, tiny.quant, tiny.context_length) == (
        "Tiny Test", "llama", "Q4_K_M", 4096
    )  # fmt: skip
    assert tiny.has_chat_template and tiny.problem is None
    assert models["broken.gguf"].header.problem is not None
    assert (tmp_path / INDEX).is_file()
    mark_used(tmp_path / "tiny.gguf", 1234.0)
    again = {m.name: m for m in await local_models(tmp_path)}
    assert again["tiny.gguf"].last_used == 1234.0 and again["tiny.gguf"].header == tiny


async def test_a_model_runs_at_its_files_temperature_else_at_the_apps(tmp_path: Path) -> None:
    """A file that names a temperature keeps it (the server reads it there: none is passed);
    one that names none, or cannot be read, runs at the app's default."""
    own = tiny_gguf(tmp_path / "own.gguf", temperature=0.7)
    plain = tiny_gguf(tmp_path / "plain.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\xff" * 64)
    assert await server_temperature(own) is None
    assert await server_temperature(plain) == DEFAULT_TEMPERATURE
    assert await server_temperature(broken) == DEFAULT_TEMPERATURE
    assert await server_temperature(tmp_path / "gone.gguf") == DEFAULT_TEMPERATURE
    pipe = tmp_path / "pipe.gguf"
    os.mkfifo(pipe)  # opening it for reading would wait for a writer
    assert await asyncio.wait_for(server_temperature(pipe), 10) == DEFAULT_TEMPERATURE


async def test_a_damaged_index_is_only_a_cache(tmp_path: Path) -> None:
    tiny_gguf(tmp_path / "tiny.gguf")
    (tmp_path / INDEX).write_text('{"tiny.gguf:1:2": 5, "x": [')
    (model,) = await local_models(tmp_path)
    assert model.header.quant == "Q4_K_M"


async def test_delete_and_import(tmp_path: Path) -> None:
    elsewhere = tiny_gguf(tmp_path / "elsewhere.gguf")
    models = tmp_path / "models"
    imported = await import_model(models, elsewhere)
    assert imported == models / "elsewhere.gguf" and imported.read_bytes() == elsewhere.read_bytes()
    with pytest.raises(LibraryError, match="already has"):
        await import_model(models, elsewhere)
    with pytest.raises(LibraryError, match="not a GGUF"):
        await import_model(models, tmp_path / "nothing.txt")
    with pytest.raises(LibraryError, match="no model named"):
        delete_model(models, "../elsewhere.gguf" + "x")
    delete_model(models, "../elsewhere.gguf")  # only its name counts: the one in models/
    assert not imported.exists() and elsewhere.exists()


async def test_a_split_model_with_its_projector_is_one_model_and_deleted_whole(
    tmp_path: Path,
) -> None:
    first = tiny_gguf(tmp_path / "big-00001-of-00002.gguf")
    second = tmp_path / "big-00002-of-00002.gguf"
    projector = tmp_path / "big-00001-of-00002.mmproj.gguf"
    second.write_bytes(b"GGUF rest")
    projector.write_bytes(b"GGUF clip")
    (tmp_path / "big-00002-of-00002.gguf.part").write_bytes(b"x")
    tiny_gguf(tmp_path / "other.gguf")
    models = {m.name: m for m in await local_models(tmp_path)}
    assert set(models) == {first.name, "other.gguf"}
    assert models[first.name].sees_images and not models["other.gguf"].sees_images
    delete_model(tmp_path, first.name)
    assert sorted(p.name for p in tmp_path.glob("*.gguf*")) == ["other.gguf"]


async def test_last_used_is_kept_for_a_model_never_listed_and_across_a_reread(
    tmp_path: Path,
) -> None:
    tiny = tiny_gguf(tmp_path / "tiny.gguf")
    mark_used(tiny, 1700000000.0)  # run before the manager ever listed it
    (model,) = await local_models(tmp_path)
    assert model.last_used == 1700000000.0 and model.header.quant == "Q4_K_M"
    mark_used(tmp_path / "gone.gguf", 1.0)  # a file deleted meanwhile: nothing happens
    assert [m.name for m in await local_models(tmp_path)] == ["tiny.gguf"]
