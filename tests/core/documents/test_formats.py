import pytest

from desktop.core.documents.formats import HEADING_JOIN, Section, clean, readable, sections_of
from tests.support.documents import docx_with, pdf_pages


def test_markdown_sections_carry_their_heading_path_and_ignore_fenced_hashes() -> None:
    text = (
        "Intro line.\n# Setup\nInstall it.\n## Linux\nUse apt.\n```sh\n# not a heading\n```\n"
        "# Usage\nRun it."
    )
    sections = sections_of("notes.md", text.encode())
    assert [s.heading for s in sections] == ["", "Setup", f"Setup{HEADING_JOIN}Linux", "Usage"]
    assert "# not a heading" in sections[2].text
    assert all(s.page is None for s in sections)


def test_a_pdf_is_read_page_by_page() -> None:
    sections = sections_of("manual.pdf", pdf_pages(["Power on the router.", "Hold reset."]))
    assert [(s.page, s.text.strip()) for s in sections] == [
        (1, "Power on the router."),
        (2, "Hold reset."),
    ]


def test_a_word_document_keeps_its_headings() -> None:
    data = docx_with([(1, "Budget"), (None, "Rent is 900."), (2, "Food"), (None, "Food is 300.")])
    sections = sections_of("plan.docx", data)
    assert [s.heading for s in sections] == ["Budget", f"Budget{HEADING_JOIN}Food"]
    assert "Rent is 900." in sections[0].text and "Food is 300." in sections[1].text


def test_html_gives_visible_text_under_headings_without_scripts() -> None:
    page = (
        "<html><head><title>T</title><script>steal()</script></head><body>"
        "<h1>Guide</h1><p>First &amp; foremost.</p><style>p{}</style>"
        "<h2>Part <b>two</b></h2><p>More   text.</p></body></html>"
    )
    sections = sections_of("guide.html", page.encode())
    assert [s.heading for s in sections] == ["Guide", f"Guide{HEADING_JOIN}Part two"]
    assert "First & foremost." in sections[0].text
    assert all("steal" not in s.text for s in sections)


def test_a_headings_permalink_is_not_among_its_words() -> None:
    """Sphinx and MkDocs end each heading with a pilcrow linking to it."""
    page = "<body><h1>shutil<a class='headerlink' href='#s'>¶</a></h1><p>Copying files.</p>"
    (section,) = sections_of("shutil.html", page.encode())
    assert section.heading == "shutil"
    assert section.text == "shutil\n\nCopying files."


def test_control_characters_are_dropped_and_binary_is_refused() -> None:
    assert clean("a\x1b[2Jb\x00c\r\nd\x85") == "a[2Jbc\nd"
    assert sections_of("x.txt", b"plain\x07 text") == [Section("plain text")]
    with pytest.raises(ValueError, match="binary"):
        sections_of("x.txt", b"\x00\x01\x02" * 100)
    with pytest.raises(ValueError, match="not a PDF"):
        sections_of("x.pdf", b"%PDF-1.7\ngarbage")
    with pytest.raises(ValueError, match="Word"):
        sections_of("x.docx", b"PK\x03\x04 not really a zip")


def test_which_files_a_folder_gives() -> None:
    from pathlib import PurePath

    assert readable(PurePath("a/notes.MD")) and readable(PurePath("README"))
    assert readable(PurePath("x.py")) and readable(PurePath("paper.pdf"))
    assert not readable(PurePath("photo.jpg")) and not readable(PurePath(".env"))
