"""Finding the passages for a query: BM25 always; and where the passages have vectors from
the embedding model in use, the nearest ones too, the two rankings fused by reciprocal
rank (a passage scores the sum of 1 / (60 + its rank) over the lists that have it), which
needs no tuning between scores of different kinds."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

from desktop.core.documents.embeddings import Embedder, EmbeddingError
from desktop.core.documents.index import DocumentIndex, Hit
from desktop.core.documents.vectors import VectorIndex

# The constant of reciprocal-rank fusion, as its authors set it (Cormack et al., 2009).
RRF_K = 60
# How deep each ranking is read before fusing.
CANDIDATES = 50


@dataclass(frozen=True)
class Found:
    """The passages, best first, the methods that ranked them, and why embeddings were not
    used where they were meant to be ("" otherwise)."""

    hits: list[Hit]
    methods: tuple[str, ...]
    note: str = ""


def fuse(rankings: Sequence[list[Hit]], limit: int) -> list[Hit]:
    """The rankings' passages by reciprocal-rank fusion, each keeping every method's score
    and its fused one."""
    fused: dict[int, float] = {}
    merged: dict[int, Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, 1):
            fused[hit.chunk] = fused.get(hit.chunk, 0.0) + 1.0 / (RRF_K + rank)
            kept = merged.get(hit.chunk)
            merged[hit.chunk] = (
                hit if kept is None else replace(kept, scores={**kept.scores, **hit.scores})
            )
    best = sorted(fused, key=lambda chunk: -fused[chunk])[:limit]
    return [
        replace(merged[c], score=fused[c], scores={**merged[c].scores, "fused": fused[c]})
        for c in best
    ]


class Retriever:
    """The searches of one document index; `embedder` (None: BM25 alone) says which
    embedding model's vectors are searched too, and makes the query's own."""

    def __init__(self, index: DocumentIndex, embedder: Embedder | None = None) -> None:
        self.index = index
        self.vectors = VectorIndex(index)
        self.embedder = embedder

    async def find(self, query: str, collections: Sequence[str] | None, limit: int) -> Found:
        lexical = await asyncio.to_thread(self.index.search, query, collections, CANDIDATES)
        embedder = self.embedder
        if embedder is None:
            return Found(lexical[:limit], ("bm25",))
        model = embedder.source.model
        if not await asyncio.to_thread(self.vectors.has, model):
            return Found(lexical[:limit], ("bm25",), f"no passage has a vector from {model} yet")
        try:
            (vector,) = await embedder.embed([query])
        except EmbeddingError as exc:
            return Found(lexical[:limit], ("bm25",), str(exc))
        semantic = await asyncio.to_thread(
            self.vectors.nearest, model, vector, collections, CANDIDATES
        )
        return Found(fuse([lexical, semantic], limit), ("bm25", "embedding"))
