"""A document's text in sections that know where they are: a PDF's pages, the headings of
Markdown, HTML and Word files, the whole of a text or source file. Pure functions of the
file's bytes, run in the indexer's killable child: a hostile file costs that child, never
the app."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePath

from desktop.core.errors import LoomchatError


# What a collection reads; anything else in a folder is passed over without a word (images,
# archives, binaries). Names with no suffix (README, Makefile) are read if they are text.
def _listed(words: str) -> frozenset[str]:
    return frozenset(words.split())


TEXT_SUFFIXES = _listed(
    ".txt .text .md .markdown .mdx .rst .adoc .org .tex .csv .tsv .log .json .jsonl .yaml .yml "
    ".toml .ini .cfg .conf .xml .srt .vtt"
)
CODE_SUFFIXES = _listed(
    ".py .pyi .js .mjs .cjs .ts .tsx .jsx .c .h .cc .cpp .cxx .hpp .hh .java .kt .kts .go .rs "
    ".rb .php .cs .fs .swift .m .mm .scala .sh .bash .zsh .fish .ps1 .bat .sql .lua .r .jl "
    ".pl .hs .ex .exs .erl .clj .dart .vue .svelte .css .scss .less .gradle .cmake .proto "
    ".graphql .nix .zig .v .sv .vhd"
)
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
READABLE_SUFFIXES = TEXT_SUFFIXES | CODE_SUFFIXES | HTML_SUFFIXES | {".pdf", ".docx"}
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
# The heading path of a section, its parts joined by this.
HEADING_JOIN = " › "
_MARKDOWN_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
# C0 controls but tab and newline, DEL and C1 controls: a document's text may carry them
# (a terminal escape, a stray NUL) and none means anything to a model or a reader.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Section:
    """A stretch of a document: its text, its page (PDFs, from 1) and heading path."""

    text: str
    page: int | None = None
    heading: str = ""


def readable(path: PurePath) -> bool:
    """Whether a folder's file is one a collection reads (by its name)."""
    suffix = path.suffix.lower()
    return suffix in READABLE_SUFFIXES or (not suffix and not path.name.startswith("."))


def sections_of(name: str, data: bytes) -> list[Section]:
    """The file's sections; `ValueError` saying why it has none that can be read."""
    suffix = PurePath(name).suffix.lower()
    if suffix == ".pdf" or data[:5] == b"%PDF-":
        return _pdf(data)
    if suffix == ".docx":
        return _docx(data)
    text = clean(decoded(data))
    if suffix in HTML_SUFFIXES:
        return _html(text)
    if suffix in MARKDOWN_SUFFIXES:
        return _markdown(text)
    return [Section(text)] if text.strip() else []


def clean(text: str) -> str:
    """Newlines made one kind, control characters and lone surrogates dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROLS.sub("", text)
    return text.encode("utf-8", "replace").decode("utf-8")


def decoded(data: bytes) -> str:
    """A text file's bytes as text: UTF-16 with its mark (Windows' Notepad, PowerShell),
    else UTF-8, else a legacy 8-bit file; `ValueError` for binary content."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    if b"\x00" in data[:8192]:
        raise ValueError("it looks binary, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # a legacy 8-bit text file


def _markdown(text: str) -> list[Section]:
    """Sections at each heading (not inside a fenced code block), with the heading path."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    fenced = False

    def close() -> None:
        body = "\n".join(lines)
        if body.strip():
            sections.append(Section(body, None, HEADING_JOIN.join(t for _, t in path)))
        lines.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _MARKDOWN_HEADING.match(line)
        if heading:
            close()
            level = len(heading.group(1))
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, heading.group(2))]
        lines.append(line)
    close()
    return sections


class UnreadablePdf(LoomchatError, ValueError):
    """A PDF whose text cannot be had: password-protected (`cause` None), or damaged (what
    pypdf raised)."""

    def __init__(self, cause: Exception | None) -> None:
        super().__init__("password-protected" if cause is None else type(cause).__name__)
        self.cause = cause


def pdf_pages(data: bytes) -> list[str]:
    """Each page's text layer as pypdf reads it (an attachment's and a collection's)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadablePdf(None)
        return [page.extract_text() or "" for page in reader.pages]
    except UnreadablePdf:
        raise
    except Exception as exc:  # pypdf's many ways to say "damaged"
        raise UnreadablePdf(exc) from None


def _pdf(data: bytes) -> list[Section]:
    try:
        pages = [clean(text) for text in pdf_pages(data)]
    except UnreadablePdf as exc:
        if exc.cause is None:
            raise ValueError("it is a password-protected PDF") from None
        raise ValueError(f"it is not a PDF that can be read ({exc})") from None
    sections = [Section(text, number) for number, text in enumerate(pages, 1) if text.strip()]
    if not sections:
        raise ValueError("it has no text to read (a scanned PDF?)")
    return sections


def _docx(data: bytes) -> list[Section]:
    import docx  # python-docx; its XML parser resolves no entities

    try:
        document = docx.Document(io.BytesIO(data))
        paragraphs = [(p.style.name if p.style is not None else "", p.text)
                      for p in document.paragraphs]  # fmt: skip
    except Exception as exc:  # a damaged or mislabelled file
        why = f"it is not a Word document that can be read ({type(exc).__name__})"
        raise ValueError(why) from None
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []

    def close() -> None:
        body = clean("\n\n".join(lines))
        if body.strip():
            sections.append(Section(body, None, HEADING_JOIN.join(t for _, t in path)))
        lines.clear()

    for style, text in paragraphs:
        level = _heading_level(style)
        if level is not None and text.strip():
            close()
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, text.strip())]
        lines.append(text)
    close()
    return sections


def _heading_level(style: str) -> int | None:
    if style == "Title":
        return 0
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else None


class _HtmlText(HTMLParser):
    """The visible text of a page in sections at its headings; scripts, styles and the
    head left out. A site's navigation is kept: a documentation page's sidebar lists its
    own sections, and BM25 found the right page less often without it. Entities are
    decoded by the parser; nothing is fetched."""

    BLOCKS = _listed(
        "p div br li tr td th pre blockquote section article header footer ul ol table dd dt "
        "h1 h2 h3 h4 h5 h6 title"
    )
    HIDDEN = frozenset({"script", "style", "head", "noscript", "template", "svg"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self._path: list[tuple[int, str]] = []
        self._text: list[str] = []
        self._hidden = 0
        self._heading: tuple[int, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self._hidden += 1
        elif tag in self.BLOCKS:
            self._text.append("\n")
        if re.fullmatch(r"h[1-6]", tag) and not self._hidden:
            self._close()
            self._heading = (int(tag[1]), [])

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in self.BLOCKS:
            self._text.append("\n")
        if self._heading is not None and tag == f"h{self._heading[0]}":
            level, words = self._heading
            title = " ".join("".join(words).split())
            self._path = [(lvl, t) for lvl, t in self._path if lvl < level] + [(level, title)]
            self._heading = None

    def handle_data(self, data: str) -> None:
        # A lone pilcrow is a heading's permalink (Sphinx, MkDocs), not its words.
        if self._hidden or data.strip() == "¶":
            return
        self._text.append(data)
        if self._heading is not None:
            self._heading[1].append(data)

    def _close(self) -> None:
        lines = (" ".join(line.split()) for line in "".join(self._text).split("\n"))
        body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        if body:
            heading = HEADING_JOIN.join(t for _, t in self._path)
            self.sections.append(Section(body, None, heading))
        self._text = []

    def finish(self) -> list[Section]:
        self.close()
        self._close()
        return self.sections


def _html(text: str) -> list[Section]:
    parser = _HtmlText()
    parser.feed(text)
    return parser.finish()
