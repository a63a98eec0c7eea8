"""`python -m desktop docs ...`: document collections, headless.

    docs add NAME PATH...     add folders or files to a collection (made if new), index it
    docs index [NAME]         bring a collection (or every one) up to date with its files
    docs list [--json]        the collections: sources, files, passages, problems
    docs remove NAME [PATH...]    remove sources from a collection, or the collection
    docs search QUERY [--collection NAME] [--limit N] [--json]

Progress goes to stderr; results to stdout. Exit 0 on success, 1 with a message on
failure, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from desktop.cli_models import printable
from desktop.core.documents.index import INDEX_FILE, DocumentIndex
from desktop.core.documents.indexer import IndexProgress, IndexReport, index_collection
from desktop.core.documents.tool import where
from desktop.core.errors import UsageError
from desktop.core.storage.paths import data_dir


def add_docs_parser(commands: Any) -> None:
    docs = commands.add_parser("docs", help="document collections: add, index, list, search")
    verbs = docs.add_subparsers(dest="verb", required=True, metavar="VERB")
    add = verbs.add_parser("add", help="add folders or files to a collection, and index it")
    add.add_argument("name")
    add.add_argument("paths", nargs="+", type=Path)
    add.add_argument("--no-index", action="store_true", help="add only; index later")
    index = verbs.add_parser("index", help="bring collections up to date with their files")
    index.add_argument("name", nargs="?")
    listing = verbs.add_parser("list", help="the collections")
    listing.add_argument("--json", action="store_true")
    remove = verbs.add_parser("remove", help="remove sources from a collection, or all of it")
    remove.add_argument("name")
    remove.add_argument("paths", nargs="*", type=Path)
    search = verbs.add_parser("search", help="the passages that best match a query")
    search.add_argument("query")
    search.add_argument("--collection", action="append", help="only this one (repeatable)")
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--json", action="store_true")


async def docs_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    index = await asyncio.to_thread(DocumentIndex, data_dir() / INDEX_FILE)
    if index.notice:
        err.write(f"{index.notice}\n")
    try:
        return await _verb(index, args, out, err)
    finally:
        index.close()


async def _verb(index: DocumentIndex, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    match args.verb:
        case "add":
            missing = [str(p) for p in args.paths if not p.exists()]
            if missing:
                raise UsageError(f"no such file or folder: {', '.join(missing)}")
            await asyncio.to_thread(index.add_sources, args.name, args.paths)
            return 0 if args.no_index else await _index(index, [args.name], out, err)
        case "index":
            names = [args.name] if args.name else await asyncio.to_thread(index.names)
            return await _index(index, names, out, err)
        case "list":
            infos = [index.info(name) for name in index.names()]
            if args.json:
                out.write(json.dumps([asdict(i) for i in infos]) + "\n")
            for info in [] if args.json else infos:
                out.write(printable(f"{info.name}\t{info.files} files\t{info.pages} pages\t"
                                    f"{info.chunks} passages\t{len(info.problems)} problems",
                                    keep="\t") + "\n")  # fmt: skip
                for source in info.sources:
                    out.write(f"  {printable(source)}\n")
            return 0
        case "remove":
            await asyncio.to_thread(index.remove, args.name, args.paths)
            return 0
        case "search":
            hits = await asyncio.to_thread(index.search, args.query, args.collection, args.limit)
            if args.json:
                out.write(json.dumps([asdict(h) for h in hits]) + "\n")
            for number, hit in enumerate([] if args.json else hits, 1):
                out.write(printable(f"[{number}] {where(hit)}  ({hit.score:.2f})  {hit.path}"))
                out.write("\n" + printable(hit.text[:400], keep="\n") + "\n\n")
            return 0
    raise AssertionError(args.verb)


async def _index(index: DocumentIndex, names: list[str], out: TextIO, err: TextIO) -> int:
    for name in names:
        report = await index_collection(index, name, _progress(err))
        err.write("\n")
        out.write(printable(_summary(name, report)) + "\n")
        for path, problem in report.problems:
            out.write(f"  {printable(path)}: {printable(problem)}\n")
    return 0


def _summary(name: str, report: IndexReport) -> str:
    return (
        f"{name}: {report.added} added, {report.updated} updated, {report.unchanged} "
        f"unchanged, {report.removed} removed, {len(report.problems)} with problems"
    )


def _progress(err: TextIO) -> Any:
    def show(progress: IndexProgress) -> None:
        share = progress.bytes_done / progress.bytes_total if progress.bytes_total else 1.0
        left = progress.seconds_left
        eta = f", {left:.0f} s left" if left is not None and share < 1 else ""
        err.write(
            f"\r{progress.collection[:30]}: {progress.files_done}/{progress.files_total} files, "
            f"{progress.pages} pages, {share:4.0%}{eta}   "
        )
        err.flush()

    return show
