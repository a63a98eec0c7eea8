"""The Hugging Face Hub through `huggingface_hub`: GGUF repos found by a search, a repo's
GGUF files with their sizes, quantisation and sha256. Its address is the library's
(`HF_ENDPOINT`), or the one given. Every call runs off the event loop, with a timeout."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from desktop.core.errors import LoomchatError
from desktop.core.tools.isolation import run_isolated

T = TypeVar("T")
# A search or a file list that takes longer than this is a Hub that cannot be reached.
HUB_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 5.0
OFFLINE = "Hugging Face cannot be reached; choose a model file instead"
# "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "model.IQ3_XXS.gguf", "x-f16.gguf", "x-BF16-00001-of-00002"
_QUANT = re.compile(r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|[FB]F?16|F32|BF16)(?=[-.]|$)", re.I)
_PART = re.compile(r"^(?P<stem>.+)-(?P<n>\d{5})-of-(?P<total>\d{5})\.gguf$", re.I)
CARD_MAX_BYTES = 256 * 1024  # a model card's start is enough for its summary
SUMMARY_CHARS = 360
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"(\*\*|__|`|<[^>]+>)")


class HubError(LoomchatError):
    """The Hub could not answer, or answered no: said in words a person can act on."""


@dataclass(frozen=True)
class HubRepo:
    """A search result: a repo with GGUF files."""

    repo_id: str
    downloads: int
    likes: int


@dataclass(frozen=True)
class HubFile:
    """One file of a repo, as the Hub lists it."""

    name: str
    size: int  # 0: the Hub did not say (checked after the download)
    sha256: str | None  # the LFS sha256; None for a small file kept in git


@dataclass(frozen=True)
class GgufChoice:
    """A model one can pick: a GGUF file, or the parts of a split one, with its projector
    (the vision part) where the repo has one."""

    name: str  # the file, or the first part's name for a split file
    files: tuple[HubFile, ...]
    quant: str | None
    projector: HubFile | None = None

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files) + (self.projector.size if self.projector else 0)


@dataclass(frozen=True)
class ModelCardSummary:
    """What a repo's model card says in brief: its licence, the model it was made from, and
    its first paragraph of prose."""

    licence: str | None = None
    base_model: str | None = None
    summary: str = ""


def card_summary(body: str) -> str:
    """The first paragraph of prose in a model card's Markdown (not a heading, an image, a
    table, code or HTML), as plain text, cut at a word near SUMMARY_CHARS."""
    fenced = False
    paragraph: list[str] = []
    for line in [*body.splitlines(), ""]:
        text = line.strip()
        if text.startswith(("```", "~~~")):
            fenced, paragraph = not fenced, []
            continue
        if fenced:
            continue
        if text and not text.startswith(("#", "<", "|", "!", "[!", "---", "- ", "* ", ">")):
            paragraph.append(text)
            continue
        plain = _MARKUP.sub("", _LINK.sub(r"\1", " ".join(paragraph))).strip()
        if len(plain) >= 40:  # a line of prose, not a stray label
            if len(plain) <= SUMMARY_CHARS:
                return plain
            return plain[:SUMMARY_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"
        paragraph = []
    return ""


def quantisation(filename: str) -> str | None:
    """The quantisation a GGUF file's name says: "Q4_K_M", "IQ3_XXS", "F16"... or None."""
    found = _QUANT.findall(filename.rsplit("/", 1)[-1])
    return found[-1].upper() if found else None


def split_part(filename: str) -> int | None:
    """Which part of a split GGUF a file is ("x-00002-of-00003.gguf": 2), or None."""
    found = _PART.match(filename.rsplit("/", 1)[-1])
    return int(found["n"]) if found else None


def gguf_choices(files: list[HubFile]) -> list[GgufChoice]:
    """A repo's GGUF files as choices: split files joined, projectors (mmproj) attached."""
    ggufs = [f for f in files if f.name.lower().endswith(".gguf")]  # download.is_gguf_name
    projectors = [f for f in ggufs if "mmproj" in f.name.lower()]
    projector = min(projectors, key=lambda f: f.size) if projectors else None  # the f16 one
    parts: dict[str, list[HubFile]] = {}
    choices: list[GgufChoice] = []
    for file in ggufs:
        if file in projectors:
            continue
        if split := _PART.match(file.name):
            parts.setdefault(split["stem"], []).append(file)
        else:
            choices.append(GgufChoice(file.name, (file,), quantisation(file.name), projector))
    for stem, split_files in parts.items():
        ordered = tuple(sorted(split_files, key=lambda f: f.name))
        choices.append(GgufChoice(ordered[0].name, ordered, quantisation(stem), projector))
    return sorted(choices, key=lambda c: c.size)


class Hub:
    """The Hub at `endpoint` (None: `HF_ENDPOINT`, else huggingface.co). Each question is
    asked from a child process that the timeout (or a cancel) kills: the library's own
    retries on a silent network could otherwise hold a thread for minutes."""

    def __init__(self, endpoint: str | None = None, timeout_s: float = HUB_TIMEOUT_S) -> None:
        # Read here, not in the child: the fork server's environment may be an older one.
        self.endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
        self.timeout_s = timeout_s

    async def search(self, query: str, limit: int = 20) -> list[HubRepo]:
        """GGUF repos matching `query`, the most downloaded first."""
        return await self._call(_search, self.endpoint, query, limit)

    async def files(self, repo_id: str) -> list[HubFile]:
        """Every file of the repo with its size and, for LFS files, its sha256."""
        return await self._call(_files, self.endpoint, repo_id)

    async def choices(self, repo_id: str) -> list[GgufChoice]:
        return gguf_choices(await self.files(repo_id))

    async def card(self, repo_id: str) -> ModelCardSummary:
        """The repo's model card in brief (an empty one where it has none)."""
        return await self._call(_card, self.endpoint, repo_id)

    async def _call(self, ask: Callable[..., T | _Refused], *args: Any) -> T:
        await self._check_reachable()
        try:
            answer = await run_isolated(ask, *args, timeout_s=self.timeout_s)
        except TimeoutError:
            raise HubError(f"{OFFLINE} (no answer in {self.timeout_s:g} s).") from None
        if isinstance(answer, _Refused):
            raise HubError(answer.message)
        return answer

    async def _check_reachable(self) -> None:
        """Fail at once where nothing answers at the Hub's address (no network, no such
        host): the library would retry a refused connection for the whole timeout."""
        from huggingface_hub import constants

        where = urlsplit(self.endpoint or constants.ENDPOINT)
        port = where.port or (443 if where.scheme == "https" else 80)
        try:
            _reader, writer = await asyncio.wait_for(
                asyncio.open_connection(where.hostname, port), CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            reason = "no answer" if isinstance(exc, TimeoutError) else _first_line(exc)
            raise HubError(f"{OFFLINE} ({where.hostname}: {reason}).") from None
        writer.close()


@dataclass(frozen=True)
class _Refused:
    """Why the Hub gave no answer, as plain data from the child."""

    message: str


def _asking(ask: Callable[[], T]) -> T | _Refused:
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        return ask()
    except RepositoryNotFoundError:
        return _Refused("No such model on Hugging Face (it may be private or gone).")
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        return _Refused(f"Hugging Face answered {status}: {_first_line(exc)}")
    except Exception as exc:  # no network, a refused connection, bad JSON: the library's own
        return _Refused(f"{OFFLINE} ({_first_line(exc)}).")


def _search(endpoint: str | None, query: str, limit: int) -> list[HubRepo] | _Refused:
    from huggingface_hub import HfApi

    def ask() -> list[HubRepo]:
        api = HfApi(endpoint=endpoint)
        found = api.list_models(search=query, filter="gguf", sort="downloads", limit=limit)
        return [HubRepo(m.id, int(m.downloads or 0), int(m.likes or 0)) for m in found]

    return _asking(ask)


def _files(endpoint: str | None, repo_id: str) -> list[HubFile] | _Refused:
    from huggingface_hub import HfApi

    def ask() -> list[HubFile]:
        info = HfApi(endpoint=endpoint).model_info(repo_id, files_metadata=True)
        return [file for s in info.siblings or [] if (file := listed_file(s)) is not None]

    return _asking(ask)


_SHA256 = re.compile(r"[0-9a-f]{64}")


def listed_file(sibling: Any) -> HubFile | None:
    """A file as the Hub lists it, its types checked (None: not a file that can be used):
    a name that is text, a size that is a whole number of bytes (0 where it is missing or
    impossible: checked after the download), a sha256 that is one."""
    name = getattr(sibling, "rfilename", None)
    if not isinstance(name, str) or not name or len(name) > 1000:
        return None
    listed = getattr(sibling, "size", None)
    size = listed if isinstance(listed, int) and not isinstance(listed, bool) else 0
    lfs = getattr(sibling, "lfs", None)
    sha256 = getattr(lfs, "sha256", None) if lfs is not None else None
    valid_sha = isinstance(sha256, str) and _SHA256.fullmatch(sha256) is not None
    return HubFile(name, max(size, 0), sha256 if valid_sha else None)


def _card(endpoint: str | None, repo_id: str) -> ModelCardSummary | _Refused:
    from huggingface_hub import ModelCard, get_session, hf_hub_url, hf_raise_for_status
    from huggingface_hub.utils._headers import build_hf_headers

    def ask() -> ModelCardSummary:
        url = hf_hub_url(repo_id, "README.md", endpoint=endpoint)
        with get_session().stream("GET", url, headers=build_hf_headers()) as response:
            if response.status_code == 404:
                return ModelCardSummary()
            hf_raise_for_status(response)
            start = bytearray()
            for chunk in response.iter_bytes():
                start += chunk
                if len(start) >= CARD_MAX_BYTES:
                    break
        content = start[:CARD_MAX_BYTES].decode("utf-8", "replace")
        try:
            card = ModelCard(content, ignore_metadata_errors=True)
        except Exception:  # YAML that does not parse: the prose still counts
            body = content.split("\n---", 2)[-1] if content.startswith("---") else content
            return ModelCardSummary(summary=card_summary(body))
        data: dict[str, Any] = card.data.to_dict()  # type: ignore[no-untyped-call]
        base, licence = data.get("base_model"), data.get("license")
        return ModelCardSummary(
            str(licence) if licence else None,
            ", ".join(map(str, base)) if isinstance(base, list) else (str(base) if base else None),
            card_summary(card.text),
        )

    return _asking(ask)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
