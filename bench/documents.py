"""Document collections: how fast a folder is indexed, how big the index is, how fast a
search answers as the index grows.

    .venv/bin/python -m bench documents [--files 3000] [--sizes 1000,10000,100000]

The corpus is real and on every machine that runs Loomchat: the files of this Python's
standard library (source, text, HTML, XML, test data), the first `--files` of them in path
order. Measured side by side in one run:

- indexing from nothing (files/s, MB/s), then again with nothing changed (only sizes and
  times looked at), then with one file in ten touched (hashes compared, nothing re-read as
  changed);
- the index file's size, and the app process's peak memory while it indexes (the reading
  runs in child processes);
- search latency p50/p95 over 200 queries (two or three words drawn from the passages) at
  each size in `--sizes`: an index of that many passages, made from the corpus's passages
  repeated under other file names; and at each size the nearest-vector search the hybrid
  makes (exact cosine over a matrix in memory), its first read of the matrix, and the
  matrix's memory.

Writes `bench/results/documents.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sysconfig
import tempfile
import time
from pathlib import Path

import psutil

from bench.report import percentiles, write_table
from desktop.core.documents.chunks import Chunk
from desktop.core.documents.formats import readable
from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.indexer import MAX_DOCUMENT_BYTES, index_collection
from desktop.core.documents.retrieval import CANDIDATES
from desktop.core.documents.vectors import VectorIndex

QUERIES = 200
# all-MiniLM-L6-v2's vectors (the retrieval bench's embedding model).
DIMENSIONS = 384


def corpus(count: int) -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found: list[Path] = []
    for folder, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in {"site-packages", "__pycache__"})
        for name in sorted(files):
            path = Path(folder) / name
            if (
                readable(path)
                and not path.is_symlink()
                and path.stat().st_size < MAX_DOCUMENT_BYTES
            ):
                found.append(path)
    return found[:count]


async def index_speed(files: list[Path], work: Path) -> list[tuple[str, str]]:
    """Index a copy of the files three ways; rows of (metric, value)."""
    folder = work / "corpus"
    for number, path in enumerate(files):
        target = folder / f"{number:05d}-{path.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    megabytes = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
    index = DocumentIndex(work / "index.sqlite3")
    index.add_sources("stdlib", [folder])
    me = psutil.Process()
    peak = me.memory_info().rss
    sampling = True

    async def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, me.memory_info().rss)
            await asyncio.sleep(0.05)

    sampler = asyncio.ensure_future(sample())
    started = time.perf_counter()
    first = await index_collection(index, "stdlib")
    fresh = time.perf_counter() - started
    sampling = False
    await sampler
    started = time.perf_counter()
    await index_collection(index, "stdlib")
    unchanged = time.perf_counter() - started
    for n, path in enumerate(sorted(folder.iterdir())):
        if n % 10 == 0:
            os.utime(path)
    started = time.perf_counter()
    touched = await index_collection(index, "stdlib")
    retouched = time.perf_counter() - started
    info = index.info("stdlib")
    index.close()
    size = sum(p.stat().st_size for p in work.glob("index.sqlite3*")) / 2**20
    indexed, problems = first.added, len(first.problems)
    speed = f"{indexed / fresh:.0f} files/s, {megabytes / fresh:.2f} MB/s"
    return [
        ("files indexed, of those", f"{indexed:,} of {len(files):,}, {problems} with problems"),
        ("passages, MB of text", f"{info.chunks:,}, {megabytes:.1f} MB"),
        ("indexing from nothing", f"{fresh:.1f} s: {speed}"),
        ("again, nothing changed", f"{unchanged:.2f} s ({fresh / unchanged:.0f}x faster)"),
        ("again, one file in ten touched", f"{retouched:.2f} s ({touched.unchanged:,} unchanged)"),
        ("index size", f"{size:.1f} MB ({size / megabytes:.2f}x the text)"),
        ("app's peak memory while indexing", f"{peak / 2**20:.0f} MB"),
    ]  # fmt: skip


def search_speed(source: Path, sizes: list[int], work: Path) -> list[tuple[str, str]]:
    """An index of each size, filled from the source index's passages, then timed."""
    rows = []
    original = DocumentIndex(source)
    texts = [text for _, text in original.passages()]
    original.close()
    rng = random.Random(7)
    words = [w for t in rng.sample(texts, min(500, len(texts))) for w in t.split() if w.isalpha()]
    queries = [" ".join(rng.sample(words, rng.choice((2, 3)))) for _ in range(QUERIES)]
    for size in sizes:
        path = work / f"size-{size}.sqlite3"
        index = DocumentIndex(path)
        index.add_sources("c", [work])
        done = 0
        copy = 0
        while done < size:
            batch = [Chunk(t, 0, 0, len(t)) for t in texts[: min(len(texts), size - done)]]
            index.store("c", f"/copy{copy}", 1, 1, str(copy), 0, batch)
            done += len(batch)
            copy += 1
        timings = []
        for query in queries:
            started = time.perf_counter()
            index.search(query, limit=5)
            timings.append((time.perf_counter() - started) * 1000)
        megabytes = sum(p.stat().st_size for p in work.glob(f"size-{size}.sqlite3*")) / 2**20
        p50, p95 = percentiles(timings)
        shown = f"{p50:.1f} / {p95:.1f} ms; index {megabytes:.0f} MB"
        rows.append((f"search at {size:,} passages (p50 / p95)", shown))
        rows.append(vector_speed(index, size, rng))
        index.close()
    return rows


def vector_speed(index: DocumentIndex, size: int, rng: random.Random) -> tuple[str, str]:
    """Every passage given a vector of all-MiniLM's length (random, normalised: the cost of
    the search does not depend on what the vectors say), then the nearest ones timed as the
    hybrid search asks for them, after the matrix is read once."""
    import numpy as np

    vectors = VectorIndex(index)
    generator = np.random.default_rng(rng.randrange(2**32))
    with index.locked() as db:
        chunks = [int(c) for (c,) in db.execute("SELECT id FROM chunks ORDER BY id")]
    for start in range(0, len(chunks), 5000):
        part = chunks[start : start + 5000]
        matrix = generator.standard_normal((len(part), DIMENSIONS)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors.store("bench", part, matrix)
    started = time.perf_counter()
    vectors.has("bench")
    vectors.nearest("bench", matrix[0], None, 1)  # reads the matrix
    first = (time.perf_counter() - started) * 1000
    timings = []
    for _ in range(QUERIES):
        query = generator.standard_normal(DIMENSIONS).astype(np.float32)
        query /= np.linalg.norm(query)
        started = time.perf_counter()
        vectors.nearest("bench", query, None, CANDIDATES)
        timings.append((time.perf_counter() - started) * 1000)
    p50, p95 = percentiles(timings)
    memory = size * DIMENSIONS * 4 / 2**20
    shown = f"{p50:.1f} / {p95:.1f} ms; first read {first:.0f} ms; {memory:.0f} MB in memory"
    return f"nearest vectors at {size:,} passages, {DIMENSIONS} dimensions (p50 / p95)", shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--out", type=Path, default=Path("bench/results/documents.md"))
    args = parser.parse_args()
    files = corpus(args.files)
    with tempfile.TemporaryDirectory(prefix="loomchat-bench-docs-") as temp:
        work = Path(temp)
        rows = asyncio.run(index_speed(files, work))
        sizes = [int(s) for s in args.sizes.split(",") if s]
        rows += search_speed(work / "index.sqlite3", sizes, work)
    write_table(rows, args.out)


if __name__ == "__main__":
    main()
