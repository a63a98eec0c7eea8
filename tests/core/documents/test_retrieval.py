"""Vectors made after indexing, kept with their passages, and the hybrid search: BM25 and
the nearest vectors fused by reciprocal rank, or BM25 alone (with the reason) when the
embedding server is not there."""

from __future__ import annotations

from pathlib import Path

from desktop.core.documents.chunks import Chunk
from desktop.core.documents.embeddings import Embedder, EmbeddingSource
from desktop.core.documents.index import DocumentIndex, Hit
from desktop.core.documents.retrieval import RRF_K, Retriever, fuse
from desktop.core.documents.vectors import EmbedProgress, embed_collection
from tests.core.documents.test_embeddings import openai_reply
from tests.support.replay_server import Canned, Received, ReplayServer

PASSAGES = {
    "/n/boat.md": "The kayak is kept in the blue shed.",
    "/n/money.md": "Send the tax invoice in March.",
    "/n/car.md": "The car is parked in the street.",
}


def indexed(tmp_path: Path) -> DocumentIndex:
    index = DocumentIndex(tmp_path / "index.sqlite3")
    index.add_sources("notes", [Path("/n")])
    for path, text in PASSAGES.items():
        chunk = Chunk(text, 0, 0, len(text), heading="Notes > " + Path(path).stem)
        index.store("notes", path, 1, 1, "sha", 0, [chunk])
    return index


def hit(chunk: int, score: float, method: str) -> Hit:
    return Hit(chunk, "c", f"/{chunk}", None, "", 0, 1, "t", score, {method: score})


def test_fusion_ranks_by_reciprocal_rank_and_keeps_each_methods_score() -> None:
    lexical = [hit(1, 9.0, "bm25"), hit(2, 5.0, "bm25")]
    semantic = [hit(2, 0.9, "embedding"), hit(3, 0.8, "embedding")]
    fused = fuse([lexical, semantic], 5)
    assert [h.chunk for h in fused] == [2, 1, 3]  # in both lists beats first in one
    assert fused[0].scores == {"bm25": 5.0, "embedding": 0.9,
                               "fused": 1 / (RRF_K + 2) + 1 / (RRF_K + 1)}  # fmt: skip
    assert fused[1].scores == {"bm25": 9.0, "fused": 1 / (RRF_K + 1)}
    assert fuse([lexical, semantic], 1)[0].chunk == 2


async def test_vectors_are_made_once_and_the_hybrid_finds_what_words_miss(tmp_path: Path) -> None:
    index = indexed(tmp_path)
    async with ReplayServer() as server:
        server.route("POST", "/v1/embeddings", openai_reply)
        embedder = Embedder(EmbeddingSource(server.url, "toy"))
        retriever = Retriever(index, embedder)
        early = await retriever.find("Where is my canoe?", None, 3)
        assert early.methods == ("bm25",) and "no passage has a vector" in early.note
        seen: list[EmbedProgress] = []
        assert await embed_collection(retriever.vectors, embedder, "notes", seen.append) == 3
        assert seen[-1] == EmbedProgress("notes", 3, 3)
        assert await embed_collection(retriever.vectors, embedder, "notes") == 0  # all made
        embedded = server.requests[-1].json()["input"]
        assert embedded[0] == "Notes > boat\n" + PASSAGES["/n/boat.md"]  # under its heading

        found = await retriever.find("Where is my canoe?", None, 3)
        assert found.methods == ("bm25", "embedding") and not found.note
        assert found.hits[0].path == "/n/boat.md"  # no word in common: the vectors found it
        assert set(found.hits[0].scores) == {"embedding", "fused"}
        both = await retriever.find("canoe kayak", None, 3)
        assert set(both.hits[0].scores) == {"bm25", "embedding", "fused"}
        assert (await retriever.find("canoe", ["elsewhere"], 3)).hits == []
        await embedder.aclose()

    # A file read again loses its old passages' vectors with them.
    index.store("notes", "/n/boat.md", 2, 2, "h2", 0, [Chunk("Paddles.", 0, 0, 8)])
    assert retriever.vectors.coverage("toy", "notes") == (2, 3)
    index.remove("notes")
    assert not retriever.vectors.has("toy")
    index.close()


async def test_without_the_server_the_search_is_bm25_and_says_why(tmp_path: Path) -> None:
    index = indexed(tmp_path)
    async with ReplayServer() as server:
        server.route("POST", "/v1/embeddings", openai_reply)
        embedder = Embedder(EmbeddingSource(server.url, "toy"))
        retriever = Retriever(index, embedder)
        await embed_collection(retriever.vectors, embedder, "notes")
        url = server.url
    await embedder.aclose()
    gone = Retriever(index, Embedder(EmbeddingSource(url, "toy")))  # nothing listens now
    found = await gone.find("kayak shed", None, 3)
    assert found.methods == ("bm25",) and "cannot be reached" in found.note
    assert found.hits[0].path == "/n/boat.md"
    index.close()


async def test_a_passage_the_server_refuses_even_alone_is_left_to_bm25(tmp_path: Path) -> None:
    index = indexed(tmp_path)
    long = "tax " * 10
    index.store("notes", "/n/long.md", 1, 1, "h", 0, [Chunk(long, 0, 0, len(long))])

    def refuse_long(request: Received) -> Canned:
        if any("tax tax" in text for text in request.json()["input"]):
            message = "input is too large to process. increase the physical batch size"
            return Canned.json({"error": {"code": 500, "message": message}}, 500)
        return openai_reply(request)

    async with ReplayServer() as server:
        server.route("POST", "/v1/embeddings", refuse_long)
        embedder = Embedder(EmbeddingSource(server.url, "toy"))
        retriever = Retriever(index, embedder)
        assert await embed_collection(retriever.vectors, embedder, "notes") == 3
        await embedder.aclose()
    assert retriever.vectors.coverage("toy", "notes") == (3, 4)
    index.close()
