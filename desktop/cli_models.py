"""`python -m desktop models ...`: find, download, list and delete models, headless.

    models search QUERY [--json]            GGUF repos on the Hub (HF_ENDPOINT, if set)
    models download REPO_ID FILENAME [--json]   prints the path; --json: {"path", "size", "sha256"}
    models list [--json]                    the GGUF files in the data folder's models/
    models delete NAME

Progress goes to stderr as a text bar; the result to stdout. Exit 0 on success, 1 with a
message on failure, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any, TextIO

from desktop.core.models.download import Progress, download_choice
from desktop.core.models.hub import Hub, HubError, gguf_choices
from desktop.core.models.library import delete_model, local_models
from desktop.core.storage.paths import data_dir

# A repo's files named in one error message at most.
SHOWN_CHOICES = 10


def printable(text: str, keep: str = "") -> str:
    """`text` as a terminal may show it: control characters (a repo id's escape sequences
    would move the cursor, retitle the window, clear the screen) written as escapes."""
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def models_dir() -> Path:
    return data_dir() / "models"


def add_models_parser(commands: Any) -> None:
    models = commands.add_parser("models", help="find, download, list and delete models")
    verbs = models.add_subparsers(dest="verb", required=True, metavar="VERB")
    search = verbs.add_parser("search", help="GGUF repos on Hugging Face")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=20)
    search.add_argument("--json", action="store_true", help="one JSON list on stdout")
    download = verbs.add_parser("download", help="a GGUF file of a repo, into models/")
    download.add_argument("repo_id")
    download.add_argument("filename")
    download.add_argument("--json", action="store_true", help='{"path", "size", "sha256"}')
    listing = verbs.add_parser("list", help="the models in the data folder")
    listing.add_argument("--json", action="store_true")
    delete = verbs.add_parser("delete", help="delete a model file by its name")
    delete.add_argument("name")


async def models_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    match args.verb:
        case "search":
            found = await Hub().search(args.query, args.limit)
            if args.json:
                out.write(json.dumps([r.__dict__ for r in found]) + "\n")
            for repo in [] if args.json else found:
                shown = printable(repo.repo_id)
                out.write(f"{shown}\t{repo.downloads} downloads\t{repo.likes} likes\n")
            return 0
        case "download":
            return await _download(args, out, err)
        case "list":
            models = await local_models(models_dir())
            if args.json:
                listed = [
                    {**m.header.__dict__, "model": m.header.name, "name": m.name,
                     "path": str(m.path), "size": m.size, "last_used": m.last_used}
                    for m in models
                ]  # fmt: skip
                out.write(json.dumps(listed) + "\n")
            for m in [] if args.json else models:
                h = m.header
                facts = [h.quant or "?", f"{h.context_length or '?'} ctx", h.problem or ""]
                line = f"{m.name}\t{m.size / 2**20:.0f} MB\t" + "\t".join(facts).rstrip()
                out.write(printable(line, keep="\t") + "\n")
            return 0
        case "delete":
            out.write(f"deleted {delete_model(models_dir(), args.name)}\n")
            return 0
    raise AssertionError(args.verb)


async def _download(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    choices = gguf_choices(await Hub().files(args.repo_id))
    wanted = args.filename
    choice = next((c for c in choices if wanted in [f.name for f in c.files]), None)
    if choice is None:
        names = ", ".join(c.name[:100] for c in choices[:SHOWN_CHOICES]) or "none"
        if len(choices) > SHOWN_CHOICES:
            names += f" and {len(choices) - SHOWN_CHOICES} more (models search lists them)"
        raise HubError(f"{args.repo_id} has no GGUF file {wanted[:200]!r}; it has: {names}")
    path = await download_choice(args.repo_id, choice, models_dir(), on_progress=_bar(err))
    err.write("\n")
    if args.json:
        digest = next((f.sha256 for f in choice.files if f.name.endswith(path.name)), None)
        size = path.stat().st_size
        out.write(json.dumps({"path": str(path), "size": size, "sha256": digest or _sha(path)}))
        out.write("\n")
    else:
        out.write(f"{path}\n")
    return 0


def _bar(err: TextIO) -> Any:
    def show(progress: Progress) -> None:
        share = progress.done / progress.total if progress.total else 0.0
        filled = int(share * 30)
        left = progress.seconds_left
        eta = f", {left:.0f} s left" if left is not None and share < 1 else ""
        speed = progress.bytes_per_s / 2**20
        err.write(
            f"\r{progress.name[:40]} [{'#' * filled}{'.' * (30 - filled)}] {share:4.0%} "
            f"{progress.done / 2**20:.1f}/{progress.total / 2**20:.1f} MB, {speed:.1f} MB/s{eta}"
        )
        err.flush()

    return show


def _sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
