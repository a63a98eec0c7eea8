"""The documents a person reads point at things that exist: a renamed file or a moved
screenshot must not leave a dead link behind."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def documents(root: Path) -> list[Path]:
    return sorted([*root.glob("*.md"), *(root / "docs").rglob("*.md")])


def dead_links(root: Path) -> list[tuple[str, str]]:
    dead = []
    for document in documents(root):
        for target in LINK.findall(document.read_text(encoding="utf-8")):
            if "://" not in target and not (document.parent / target).exists():
                dead.append((str(document.relative_to(root)), target))
    return dead


def test_every_relative_link_in_the_documents_resolves() -> None:
    assert len(documents(ROOT)) > 10  # the README, the guide, the experiments
    assert dead_links(ROOT) == []


def test_a_dead_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("x")
    (tmp_path / "README.md").write_text("[ok](docs/here.md) [gone](docs/gone.md) [web](https://x)")
    assert dead_links(tmp_path) == [("README.md", "docs/gone.md")]


def test_nothing_points_outside_the_repository() -> None:
    for document in documents(ROOT):
        text = document.read_text(encoding="utf-8")
        assert "../shared" not in text and "design.md" not in text, document
