"""Modules stay small enough to read in one sitting: a module that outgrows the ceiling
is a sign that it holds two things, and is split before it grows further."""

from pathlib import Path

CEILING = 400
PACKAGE = Path(__file__).resolve().parents[1] / "desktop"


def oversized(root: Path, ceiling: int) -> list[tuple[str, int]]:
    found = []
    for module in sorted(root.rglob("*.py")):
        lines = len(module.read_text(encoding="utf-8").splitlines())
        if lines > ceiling:
            found.append((str(module.relative_to(root.parent)), lines))
    return found


def test_no_module_of_the_app_is_over_the_ceiling() -> None:
    assert oversized(PACKAGE, CEILING) == []


def test_the_check_sees_a_module_over_the_ceiling(tmp_path: Path) -> None:
    package = tmp_path / "desktop"
    package.mkdir()
    (package / "small.py").write_text("x = 1\n" * 3)
    (package / "large.py").write_text("x = 1\n" * 5)
    assert oversized(package, 4) == [("desktop/large.py", 5)]


def test_the_ceiling_is_the_documented_one() -> None:
    architecture = (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert f"over {CEILING} lines" in architecture
