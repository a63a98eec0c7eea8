"""Which GGUF files are embedding models, read from their headers as gguf's writer makes them."""

from pathlib import Path

import gguf
import numpy as np

from desktop.core.models.gguf_header import embeds
from tests.core.models.test_library import tiny_gguf


def header_only(path: Path, architecture: str, pooling: bool) -> Path:
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name(path.stem)
    if pooling:
        writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_tensor("t", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_encoders_and_models_that_pool_embed_and_chat_models_do_not(tmp_path: Path) -> None:
    assert embeds(header_only(tmp_path / "minilm.gguf", "bert", pooling=True))
    assert embeds(header_only(tmp_path / "nomic.gguf", "nomic-bert", pooling=False))
    assert embeds(header_only(tmp_path / "qwen3-embedding.gguf", "qwen3", pooling=True))
    assert not embeds(header_only(tmp_path / "qwen3.gguf", "qwen3", pooling=False))
    assert not embeds(tiny_gguf(tmp_path / "llama.gguf"))
    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    assert not embeds(tmp_path / "broken.gguf") and not embeds(tmp_path / "gone.gguf")
