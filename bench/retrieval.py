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
passages) and MRR over the top ten, for BM25 as the app searches (and, later, embeddings
and the hybrid).

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
from collections.abc import Callable
from pathlib import Path

from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.indexer import index_collection

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


async def measure(pages: Path, asked: dict[str, str]) -> list[tuple[str, float, float]]:
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
        index.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, help="an unpacked library/ folder of HTML pages")
    parser.add_argument("--out", type=Path, default=Path("bench/results/retrieval.md"))
    args = parser.parse_args()
    pages = library_pages(args.docs)
    asked = questions(pages)
    rows = asyncio.run(measure(pages, asked))
    table = f"{len(asked)} questions\n\n| retrieval | recall@5 | MRR@10 |\n| --- | --- | --- |\n"
    table += "".join(f"| {name} | {recall:.3f} | {mrr:.3f} |\n" for name, recall, mrr in rows)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
