"""Vectors from an embedding server, over real sockets in each server's own wire format,
and what a server's broken or hostile answer becomes: an EmbeddingError, never a crash."""

from __future__ import annotations

import math

import numpy as np
import pytest

from desktop.core.documents.embeddings import (
    MAX_TEXT_CHARS,
    Embedder,
    EmbeddingError,
    EmbeddingSource,
)
from tests.support.replay_server import Canned, Received, ReplayServer

# A toy model that reads meaning as a person would in these tests: a canoe is a kayak.
TOPICS = ({"kayak", "canoe", "boat"}, {"shed", "garage", "stored"}, {"tax", "invoice"})


def toy_vector(text: str) -> list[float]:
    words = {w.strip(".,?!").casefold() for w in text.split()}
    return [float(len(words & topic)) + 0.01 for topic in TOPICS]


def openai_reply(request: Received) -> Canned:
    """llama-server's /v1/embeddings answer, its items in reverse to check they are ordered."""
    texts = request.json()["input"]
    data = [{"embedding": toy_vector(t), "index": i, "object": "embedding"}
            for i, t in enumerate(texts)]  # fmt: skip
    body = {"model": request.json()["model"], "object": "list",
            "usage": {"prompt_tokens": 9, "total_tokens": 9}, "data": data[::-1]}  # fmt: skip
    return Canned.json(body)


def ollama_reply(request: Received) -> Canned:
    texts = request.json()["input"]
    body = {"model": request.json()["model"], "embeddings": [toy_vector(t) for t in texts],
            "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8}  # fmt: skip
    return Canned.json(body)


async def test_the_openai_wire_asks_for_floats_and_orders_the_vectors_by_index() -> None:
    async with ReplayServer() as server:
        server.route("POST", "/v1/embeddings", openai_reply)
        embedder = Embedder(EmbeddingSource(server.url + "/v1", "minilm"))
        vectors = await embedder.embed(["my kayak", "the tax invoice", "x" * 5000])
        await embedder.aclose()
    sent = server.requests[0].json()
    assert sent["model"] == "minilm" and sent["encoding_format"] == "float"
    assert len(sent["input"][2]) == MAX_TEXT_CHARS  # a long passage is cut, not refused
    assert vectors.shape == (3, 3) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[0].argmax() == 0 and vectors[1].argmax() == 2


async def test_the_ollama_wire() -> None:
    async with ReplayServer() as server:
        server.route("POST", "/api/embed", ollama_reply)
        embedder = Embedder(EmbeddingSource(server.url, "nomic-embed-text", "ollama"))
        (vector,) = await embedder.embed(["stored in the garage"])
        await embedder.aclose()
    sent = server.requests[0].json()
    assert sent == {"model": "nomic-embed-text", "input": ["stored in the garage"],
                    "truncate": True}  # fmt: skip
    assert vector.argmax() == 1 and math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-5)


HOSTILE: list[tuple[str, Canned]] = [
    ("one vector for each text", Canned.json({"data": [{"embedding": [1.0], "index": 0}]})),
    ("no single, sane length", Canned.json({"data": [
        {"embedding": [1.0, 2.0], "index": 0}, {"embedding": [1.0], "index": 1}]})),
    ("no single, sane length", Canned.json({"data": [
        {"embedding": [0.5] * 9000, "index": 0}, {"embedding": [0.5] * 9000, "index": 1}]})),
    ("not numbers", Canned.json({"data": [
        {"embedding": ["a", "b"], "index": 0}, {"embedding": [1, 2], "index": 1}]})),
    ("infinite values", Canned(200, "application/json", [
        b'{"data": [{"embedding": [NaN, 1], "index": 0}, {"embedding": [1, 2], "index": 1}]}'])),
    ("not JSON", Canned(200, "application/json", [b"<html>proxy error</html>"])),
    ("refused: the model does not support embeddings", Canned.json(
        {"error": {"message": "the model does not support embeddings", "code": 501}}, 500)),
    ("answered too much", Canned(200, "application/json", [b" " * 1_000_000] * 2)),
    ("cannot be reached", Canned(silent=True)),
]  # fmt: skip


@pytest.mark.parametrize(("why", "canned"), HOSTILE)
async def test_a_broken_or_hostile_answer_is_an_embedding_error(why: str, canned: Canned) -> None:
    async with ReplayServer() as server:
        server.route("POST", "/v1/embeddings", canned)
        embedder = Embedder(EmbeddingSource(server.url, "minilm"))
        with pytest.raises(EmbeddingError, match=why):
            await embedder.embed(["one", "two"])
        await embedder.aclose()
