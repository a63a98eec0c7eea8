"""Passages' vectors: made by an embedding model after indexing, kept in the index's own
file beside their passages (a passage that leaves takes its vector along), and searched
by cosine over a matrix held in memory, read once per model and again only after the
vectors changed. A brute-force product over every passage: exact, and fast enough for a
person's collections (see `bench documents`); no approximate index to keep in step."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from desktop.core.documents.embeddings import Embedder, EmbeddingError, Vectors
from desktop.core.documents.index import (
    HIT_COLUMNS,
    HIT_JOINS,
    DocumentIndex,
    Hit,
    hit_from_row,
)

# Passages sent to the embedding server per request.
BATCH = 32


@dataclass(frozen=True)
class EmbedProgress:
    """How far a collection's passages are given vectors (`done` of `total`)."""

    collection: str
    done: int
    total: int


@dataclass
class _Matrix:
    key: tuple[int, int, int]  # the vectors' count, largest and summed chunk ids
    chunks: npt.NDArray[np.int64]
    collections: list[str]
    vectors: Vectors


class VectorIndex:
    """The vectors of one index's passages, by embedding model."""

    def __init__(self, index: DocumentIndex) -> None:
        self.index = index
        self._matrices: dict[str, _Matrix] = {}
        self._lock = threading.Lock()

    # --- made after indexing -------------------------------------------------------

    def missing(self, model: str, collection: str, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` passages of the collection that have no vector from `model`, each
        with its heading path before its text (what it is about, as a reader sees it)."""
        with self.index.locked() as db:
            rows = db.execute(
                f"SELECT chunks.id, chunks.heading, chunks.text FROM chunks {HIT_JOINS} "
                "WHERE collections.name = ? "
                "AND NOT EXISTS (SELECT 1 FROM vectors WHERE vectors.chunk = chunks.id AND "
                "vectors.model = ?) ORDER BY chunks.id LIMIT ?",
                (collection, model, limit),
            ).fetchall()
        return [(int(chunk), f"{heading}\n{text}".strip()) for chunk, heading, text in rows]

    def coverage(self, model: str, collection: str) -> tuple[int, int]:
        """(passages with a vector from `model`, passages) of the collection."""
        with self.index.locked() as db:
            done, total = db.execute(
                "SELECT COUNT(vectors.chunk), COUNT(*) FROM chunks "
                "JOIN files ON files.id = chunks.file "
                "JOIN collections ON collections.id = files.collection "
                "LEFT JOIN vectors ON vectors.chunk = chunks.id AND vectors.model = ? "
                "WHERE collections.name = ?",
                (model, collection),
            ).fetchone()
        return int(done), int(total)

    def store(self, model: str, chunks: Sequence[int], vectors: Vectors) -> None:
        """Vectors for passages; one whose passage left meanwhile is dropped."""
        rows = [(chunk, model, vector.astype(np.float32).tobytes())
                for chunk, vector in zip(chunks, vectors, strict=True)]  # fmt: skip
        with self.index.locked() as db, db:
            for row in rows:
                try:
                    db.execute(
                        "INSERT OR REPLACE INTO vectors(chunk, model, vector) VALUES (?, ?, ?)", row
                    )
                except sqlite3.IntegrityError:
                    continue  # its file was read again while it was being embedded

    def has(self, model: str) -> bool:
        with self.index.locked() as db:
            row = db.execute("SELECT 1 FROM vectors WHERE model = ? LIMIT 1", (model,)).fetchone()
        return row is not None

    # --- searched ------------------------------------------------------------------

    def nearest(self, model: str, query: Vectors, collections: Sequence[str] | None,
                limit: int) -> list[Hit]:  # fmt: skip
        """The passages whose vectors are closest to `query` (one normalised vector), best
        first, each Hit's score its cosine."""
        matrix = self._matrix(model)
        if matrix is None or limit <= 0 or query.shape[-1] != matrix.vectors.shape[1]:
            return []
        cosines = matrix.vectors @ query.reshape(-1)
        if collections is not None:
            wanted = set(collections)
            allowed = np.fromiter((c in wanted for c in matrix.collections), bool, len(cosines))
            cosines = np.where(allowed, cosines, -np.inf)
        count = min(limit, int(np.isfinite(cosines).sum()))
        if count == 0:
            return []
        best = np.argpartition(-cosines, count - 1)[:count]
        best = best[np.argsort(-cosines[best])]
        score = {int(matrix.chunks[i]): float(cosines[i]) for i in best}
        marks = ", ".join("?" * len(score))
        with self.index.locked() as db:
            rows = db.execute(
                f"SELECT {HIT_COLUMNS} FROM chunks {HIT_JOINS} WHERE chunks.id IN ({marks})",
                list(score),
            ).fetchall()
        found = {int(row[0]): row for row in rows}  # a passage gone meanwhile is left out
        return [hit_from_row(found[c], "embedding", s) for c, s in score.items() if c in found]

    def _matrix(self, model: str) -> _Matrix | None:
        with self.index.locked() as db:
            count, largest, total = db.execute(
                "SELECT COUNT(*), COALESCE(MAX(chunk), 0), COALESCE(SUM(chunk), 0) FROM vectors "
                "WHERE model = ?",
                (model,),
            ).fetchone()
        key = (int(count), int(largest), int(total))
        with self._lock:
            kept = self._matrices.get(model)
            if kept is not None and kept.key == key:
                return kept
            if not count:
                return None
            with self.index.locked() as db:
                rows = db.execute(
                    "SELECT vectors.chunk, collections.name, vectors.vector FROM vectors "
                    "JOIN chunks ON chunks.id = vectors.chunk "
                    f"{HIT_JOINS} WHERE vectors.model = ? ORDER BY vectors.chunk",
                    (model,),
                ).fetchall()
            width = len(rows[0][2]) if rows else 0
            rows = [row for row in rows if len(row[2]) == width and width % 4 == 0]
            if not rows:
                return None
            vectors = np.frombuffer(b"".join(row[2] for row in rows), np.float32)
            matrix = _Matrix(
                key,
                np.array([row[0] for row in rows], dtype=np.int64),
                [str(row[1]) for row in rows],
                vectors.reshape(len(rows), width // 4),
            )
            self._matrices[model] = matrix
            return matrix


async def embed_collection(
    vectors: VectorIndex,
    embedder: Embedder,
    collection: str,
    progress: Callable[[EmbedProgress], None] | None = None,
) -> int:
    """Vectors for every passage of the collection that has none from the embedder's model,
    a batch at a time (cancel the task to stop; what was stored stays). A passage the
    server refuses even alone is left to BM25. Returns how many were made;
    `EmbeddingError` when the server fails a whole batch (the batches before it stay)."""
    model = embedder.source.model
    done, total = await asyncio.to_thread(vectors.coverage, model, collection)
    made, refused = 0, set[int]()
    while True:
        waiting = await asyncio.to_thread(vectors.missing, model, collection, BATCH + len(refused))
        batch = [(chunk, text) for chunk, text in waiting if chunk not in refused][:BATCH]
        if not batch:
            return made
        embedded = await _embedded(embedder, [text for _, text in batch])
        refused |= {chunk for (chunk, _), v in zip(batch, embedded, strict=True) if v is None}
        kept = [(chunk, v) for (chunk, _), v in zip(batch, embedded, strict=True) if v is not None]
        if not kept:  # none of the batch could be embedded: not asked again this run
            raise EmbeddingError(f"{embedder.source.label} could embed none of the passages.")
        stack = np.stack([vector for _, vector in kept])
        await asyncio.to_thread(vectors.store, model, [chunk for chunk, _ in kept], stack)
        made += len(kept)
        if progress is not None:
            progress(EmbedProgress(collection, min(done + made, total), total))


async def _embedded(embedder: Embedder, texts: list[str]) -> list[Vectors | None]:
    """The batch's vectors; where the server refuses the batch (one passage too long for
    its context), each passage alone, a refused one None."""
    try:
        return list(await embedder.embed(texts))
    except EmbeddingError:
        if len(texts) == 1:
            return [None]
    found: list[Vectors | None] = []
    for text in texts:
        try:
            found.append((await embedder.embed([text]))[0])
        except EmbeddingError:
            found.append(None)
    return found
