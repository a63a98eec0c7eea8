"""Document search quality on data no one here wrote: finding a standard-library module's
documentation page from what its own source says it is for.

    .venv/bin/python -m bench retrieval [--docs DIR]

The corpus is the Python Library Reference as Debian ships it (`python3.11-doc`, the HTML
pages of `library/`; PSF licence): fetched with `apt-get download` into a cache folder
unless `--docs` names an unpacked one. Each question is the first sentence of a module's
docstring in this Python's standard library (read with `ast`, nothing imported), the
module's own name taken out (a person asking does not know it): "Utility functions for
copying and archiving files and directory trees." for `shutil`. The right answer is that
module's page, `library/NAME.html`: the two texts were written separately, by Python's
authors. A known-item search, so it reports recall@5 (the page among the top five
passages) and MRR over the top ten, for BM25 as the app searches, for the vectors of an
embedding model alone, and for the two fused as the app fuses them. The embedding model is
all-MiniLM-L6-v2 from PyPI, made a GGUF and served by llama-server as the app's runtime
serves one (see `bench/embedding_model.py`); `--no-embeddings` leaves it out.

Writes `bench/results/retrieval.md`.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import re
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.embedding_model import embedding_gguf
from desktop.core.documents.embeddings import Embedder, EmbeddingSource
from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.indexer import index_collection
from desktop.core.documents.retrieval import Retriever
from desktop.core.documents.vectors import embed_collection
from desktop.core.runtime import embedding_server

PACKAGE = "python3.11-doc"
CACHE = Path.home() / ".cache" / "loomchat-bench" / PACKAGE
LIBRARY = Path("usr/share/doc/python3.11/html/library")
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.DOTALL)


def library_pages(docs: Path | None) -> Path:
    """The folder of library/*.html pages: `docs`, or the package unpacked in the cache."""
    if docs is not None:
        return docs
    pages = CACHE / LIBRARY
    if not pages.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", PACKAGE], cwd=CACHE, check=True)
        (deb,) = CACHE.glob(f"{PACKAGE}_*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(CACHE)], check=True)
    return pages


def questions(pages: Path) -> dict[str, str]:
    """Module name -> its docstring's first sentence (the name taken out), for each module
    that has a page and a docstring of three words or more."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found: dict[str, str] = {}
    for page in sorted(pages.glob("*.html")):
        name = page.stem
        source = stdlib / f"{name}.py"
        if not source.is_file():
            source = stdlib / name / "__init__.py"
        if not source.is_file():
            continue
        try:
            doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        if not doc:
            continue
        match = _FIRST_SENTENCE.match(" ".join(doc.split()))
        sentence = match.group(1) if match else " ".join(doc.split())
        for part in {name, *name.split(".")}:
            sentence = re.sub(rf"\b{re.escape(part)}\b", " ", sentence, flags=re.IGNORECASE)
        sentence = " ".join(sentence.split()).strip(" -:—")
        if len(re.findall(r"[A-Za-z]{3,}", sentence)) >= 3:
            found[name] = sentence
    return found


Ranked = Callable[[str], list[str]]  # a question -> the pages of its top ten passages


def scores(asked: dict[str, str], ranked: Ranked) -> tuple[float, float]:
    """Recall@5 and MRR@10 of the module's own page among the passages found."""
    found_at5 = 0
    reciprocal = 0.0
    for name, question in asked.items():
        ranks = [r for r, page in enumerate(ranked(question)[:10], 1) if page == name]
        found_at5 += bool(ranks) and ranks[0] <= 5
        reciprocal += 1 / ranks[0] if ranks else 0.0
    return found_at5 / len(asked), reciprocal / len(asked)


def bm25s_ranking(passages: list[tuple[str, str]]) -> Ranked:
    """The same passages in bm25s (numpy, in memory), stemmed as the tool selection does."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    texts = [text for _, text in passages]
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer,
                                   show_progress=False), show_progress=False)  # fmt: skip

    def ranked(question: str) -> list[str]:
        query = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, show_progress=False)
        if not query.vocab:
            return []
        found, _ = retriever.retrieve(query, k=10, show_progress=False)
        return [Path(passages[int(i)][0]).stem for i in found[0]]

    return ranked


async def measure(
    pages: Path, asked: dict[str, str], embedding_model: Path | None
) -> list[tuple[str, float, float]]:
    with tempfile.TemporaryDirectory(prefix="loomchat-bench-retrieval-") as temp:
        index = DocumentIndex(Path(temp) / "index.sqlite3")
        index.add_sources("library", [pages])
        await index_collection(index, "library")
        passages = index.passages()

        def fts5(question: str) -> list[str]:
            return [Path(h.path).stem for h in index.search(question, limit=10)]

        rows = [
            (f"BM25, SQLite FTS5 (the app's), {len(passages):,} passages", *scores(asked, fts5)),
            ("BM25, bm25s, the same passages", *scores(asked, bm25s_ranking(passages))),
        ]
        if embedding_model is not None:
            rows += await with_embeddings(index, asked, embedding_model)
        index.close()
    return rows


async def with_embeddings(
    index: DocumentIndex, asked: dict[str, str], model: Path
) -> list[tuple[str, float, float]]:
    """The passages embedded as the app embeds a collection, then each question ranked by
    the vectors alone and by the app's hybrid."""
    server = embedding_server(model, threads=2)
    server.log_path = Path(tempfile.gettempdir()) / "loomchat-bench-embedding-server.log"
    await server.start()
    try:
        embedder = Embedder(EmbeddingSource(server.base_url, model.stem))
        retriever = Retriever(index, embedder)
        started = time.perf_counter()
        made = await embed_collection(retriever.vectors, embedder, "library")
        seconds = time.perf_counter() - started
        done, total = retriever.vectors.coverage(model.stem, "library")
        print(f"embedded {made:,} passages in {seconds:.0f} s ({made / seconds:.1f}/s); "
              f"{total - done} left to BM25", flush=True)  # fmt: skip
        vectors = {name: (await embedder.embed([q]))[0] for name, q in asked.items()}
        by_question = {q: vectors[name] for name, q in asked.items()}
        fused: dict[str, list[str]] = {}
        for question in asked.values():
            found = await retriever.find(question, None, 10)
            fused[question] = [Path(h.path).stem for h in found.hits]

        def nearest(question: str) -> list[str]:
            found = retriever.vectors.nearest(model.stem, by_question[question], None, 10)
            return [Path(h.path).stem for h in found]

        await embedder.aclose()
    finally:
        server.stop()
    return [
        (f"embeddings alone, {model.stem} (cosine, exact)", *scores(asked, nearest)),
        ("hybrid: BM25 and embeddings, reciprocal-rank fusion (the app's)",
         *scores(asked, lambda q: fused[q])),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, help="an unpacked library/ folder of HTML pages")
    parser.add_argument("--out", type=Path, default=Path("bench/results/retrieval.md"))
    parser.add_argument("--embedding-model", type=Path, help="a GGUF (default: all-MiniLM-L6-v2)")
    parser.add_argument("--no-embeddings", action="store_true", help="BM25 only")
    args = parser.parse_args()
    pages = library_pages(args.docs)
    asked = questions(pages)
    model = None if args.no_embeddings else args.embedding_model or embedding_gguf()
    rows = asyncio.run(measure(pages, asked, model))
    table = f"{len(asked)} questions\n\n| retrieval | recall@5 | MRR@10 |\n| --- | --- | --- |\n"
    table += "".join(f"| {name} | {recall:.3f} | {mrr:.3f} |\n" for name, recall, mrr in rows)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
