"""Which GGUF files are embedding models, read from their headers as gguf's writer makes them."""

from pathlib import Path

from desktop.core.models.gguf_header import embeds
from tests.core.models.test_library import tiny_gguf


def test_encoders_and_models_that_pool_embed_and_chat_models_do_not(tmp_path: Path) -> None:
    assert embeds(tiny_gguf(tmp_path / "minilm.gguf", "bert", pooling=True))
    assert embeds(tiny_gguf(tmp_path / "nomic.gguf", "nomic-bert"))
    assert embeds(tiny_gguf(tmp_path / "qwen3-embedding.gguf", "qwen3", pooling=True))
    assert not embeds(tiny_gguf(tmp_path / "qwen3.gguf", "qwen3"))
    assert not embeds(tiny_gguf(tmp_path / "llama.gguf"))
    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    assert not embeds(tmp_path / "broken.gguf") and not embeds(tmp_path / "gone.gguf")
