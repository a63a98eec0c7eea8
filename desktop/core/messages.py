"""The conversation record: messages, their text and image parts, and tool calls.

Every type round-trips through plain JSON (`to_dict` / `from_dict`), with image bytes as
base64, so a conversation can be stored, exported and traced without custom encoders.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]

# What the image sniffer recognises; vision APIs accept these four.
_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_mime(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, or None for anything else."""
    for signature, mime in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "text", "text": self.text}


@dataclass(frozen=True)
class Image:
    """An image part: raw bytes and their MIME type."""

    data: bytes = field(repr=False)
    mime: str
    kind: Literal["image"] = "image"

    @classmethod
    def from_bytes(cls, data: bytes) -> Image:
        mime = sniff_image_mime(data)
        if mime is None:
            raise ValueError("not a PNG, JPEG, GIF or WebP image")
        return cls(data=data, mime=mime)

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{self.base64()}"

    def summary(self) -> dict[str, Any]:
        """What an event stream shows of an image: its type and size, not its bytes."""
        return {"mime": self.mime, "size": len(self.data)}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "image", "mime": self.mime, "data": self.base64()}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Image:
        return cls(data=base64.b64decode(raw["data"]), mime=str(raw["mime"]))


Part = TextPart | Image


def part_from_dict(raw: dict[str, Any]) -> Part:
    if raw["kind"] == "text":
        return TextPart(str(raw["text"]))
    if raw["kind"] == "image":
        return Image.from_dict(raw)
    raise ValueError(f"unknown part kind {raw['kind']!r}")


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """`value` (text, or JSON-like data) with lone UTF-16 surrogates replaced by U+FFFD.

    A backend's JSON may hold half an emoji (`"\\ud83d"`): Python decodes it to a lone
    surrogate, which cannot be encoded, stored or shown."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    return value


_BACKTICK_RUNS = re.compile(r"`{3,}")


def fenced(text: str, info: str = "") -> str:
    """`text` in a Markdown code fence that nothing inside it can close: one backtick
    longer than its longest run of three or more. Quoted material (an attached file, a
    document's passage) thus cannot end its own quotation and pass for the person's words."""
    longest = max((len(run) for run in _BACKTICK_RUNS.findall(text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def unfenced(text: str) -> str:
    """`text` with the fences `fenced` put around quoted parts taken away (a fence line and
    the same line further on; shorter runs inside are the quoted text's own): for a person,
    who sees where a quote starts without them."""
    lines = text.split("\n")
    kept: list[str] = []
    closing: str | None = None
    for at, line in enumerate(lines):
        if closing is not None and line == closing:
            closing = None
        elif closing is None and _BACKTICK_RUNS.fullmatch(line) and line in lines[at + 1 :]:
            closing = line
        else:
            kept.append(line)
    return "\n".join(kept)


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]


def call_fingerprint(name: str, arguments: Any) -> str:
    """The same for the same call: sha256 over its name and its arguments as canonical JSON
    (sorted keys, no whitespace), so `{a:1,b:2}` and `{b:2,a:1}` are one call. The
    deduplicator refuses a repeat by it; the emulated track recognises one by it."""
    canonical = json.dumps(
        {"name": name, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ToolCall:
        return cls(id=str(raw["id"]), name=str(raw["name"]), arguments=dict(raw["arguments"]))


@dataclass(frozen=True)
class Source:
    """What a citation [n] in an answer points at: a file, and its page where it has pages,
    with where in it as a person reads it ("manual.pdf, page 4 — Setup")."""

    path: str
    page: int | None
    where: str

    @classmethod
    def from_dict(cls, raw: Any) -> Source | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            return None
        page, where = raw.get("page"), raw.get("where")
        return cls(raw["path"], _int_or_none(page), where if isinstance(where, str) else "")


@dataclass(frozen=True)
class MessageMeta:
    """What the app keeps about a message and never sends to a model. On a tool message:
    how long the call took, its error, its images (for the card) and whether they went to
    the model, or (`stage`) which check refused the call, and a document search's
    `sources` (numbered from 1, as its text cites them). On a user message the loop
    wrote: how many tool images it carries, or notes on calls that could not be read. On
    an answer: that it was stopped before its end. Stored as the JSON object it always was
    (`to_dict`); keys a newer version wrote are kept as they are (`other`)."""

    duration_ms: float | None = None
    error: str | None = None
    images: tuple[Image, ...] = ()
    sent_to_model: bool | None = None
    stage: str | None = None
    tool_images: int | None = None
    step_notes: int | None = None
    stopped: bool = False
    sources: tuple[Source, ...] = ()
    other: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.other)
        for name in ("duration_ms", "error", "sent_to_model", "stage", "tool_images",
                     "step_notes"):  # fmt: skip
            value = getattr(self, name)
            if value is not None or (name == "error" and self.duration_ms is not None):
                out[name] = value
        if self.images or self.duration_ms is not None:
            out["images"] = [image.to_dict() for image in self.images]
        if self.stopped:
            out["stopped"] = True
        if self.sources:
            out["sources"] = [asdict(source) for source in self.sources]
        return out

    @classmethod
    def from_dict(cls, raw: Any) -> MessageMeta:
        """The meta an older or another version stored; values of the wrong type are left
        out, never raised on (the store skips only what it cannot read at all)."""
        if not isinstance(raw, dict):
            return cls()
        known = {"duration_ms", "error", "images", "sent_to_model", "stage", "tool_images",
                 "step_notes", "stopped", "sources"}  # fmt: skip
        number = raw.get("duration_ms")
        images = raw.get("images")
        listed = raw.get("sources")
        found = map(Source.from_dict, listed if isinstance(listed, list) else [])
        sources = tuple(source for source in found if source is not None)
        return cls(
            duration_ms=float(number) if isinstance(number, int | float) else None,
            error=raw["error"] if isinstance(raw.get("error"), str) else None,
            images=tuple(Image.from_dict(i) for i in images) if isinstance(images, list) else (),
            sent_to_model=_bool_or_none(raw.get("sent_to_model")),
            stage=raw["stage"] if isinstance(raw.get("stage"), str) else None,
            tool_images=_int_or_none(raw.get("tool_images")),
            step_notes=_int_or_none(raw.get("step_notes")),
            stopped=raw.get("stopped") is True,
            sources=sources,
            other={k: v for k, v in raw.items() if k not in known},
        )


def _bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class Message:
    """One message of a conversation.

    `tool_calls` is set on assistant messages that call tools; `tool_call_id` and `name`
    on the tool messages that answer them, and `rejected` when the call was not run
    (the text then says why). `meta` is for the app, never sent to a model: a tool
    message's duration, error and images (for its card), for instance.
    """

    role: Role
    parts: list[Part] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    rejected: bool = False
    meta: MessageMeta = field(default_factory=MessageMeta)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", [TextPart(text)])

    @classmethod
    def user(cls, text: str, images: list[Image] | tuple[Image, ...] = ()) -> Message:
        parts: list[Part] = [TextPart(text)] if text else []
        parts.extend(images)
        return cls("user", parts)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
        return cls("assistant", [TextPart(text)] if text else [], list(tool_calls or []))

    @classmethod
    def tool(
        cls,
        call_id: str,
        name: str,
        content: str,
        *,
        rejected: bool = False,
        meta: MessageMeta | None = None,
    ) -> Message:
        return cls(
            "tool",
            [TextPart(content)],
            tool_call_id=call_id,
            name=name,
            rejected=rejected,
            meta=meta or MessageMeta(),
        )

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def images(self) -> list[Image]:
        return [p for p in self.parts if isinstance(p, Image)]

    @property
    def from_the_loop(self) -> bool:
        """A user-role message the tool loop wrote (a step's notes on calls it could not
        run, or tool images for a model that sees), not the person's."""
        loop = self.meta.tool_images is not None or self.meta.step_notes is not None
        return self.role == "user" and loop

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "parts": [p.to_dict() for p in self.parts]}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.rejected:
            out["rejected"] = True
        if meta := self.meta.to_dict():
            out["meta"] = meta
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Message:
        role = raw["role"]
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown role {role!r}")
        return cls(
            role=role,
            parts=[part_from_dict(p) for p in raw.get("parts", [])],
            tool_calls=[ToolCall.from_dict(c) for c in raw.get("tool_calls", [])],
            tool_call_id=raw.get("tool_call_id"),
            name=raw.get("name"),
            rejected=bool(raw.get("rejected", False)),
            meta=MessageMeta.from_dict(raw.get("meta")),
        )


# A rough measure for what has not been counted by a model's server yet: about four
# characters a token in English prose and code, and an image as a few hundred.
CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 300


def estimated_tokens(messages: Sequence[Message]) -> int:
    """About how many tokens `messages` take in a prompt."""
    chars = sum(len(m.text) + sum(len(json.dumps(c.arguments)) for c in m.tool_calls)
                for m in messages)  # fmt: skip
    return chars // CHARS_PER_TOKEN + IMAGE_TOKENS * sum(len(m.images) for m in messages)
