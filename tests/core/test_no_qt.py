"""desktop.core must never import Qt: it runs headless, from the CLI and in tests."""

import pkgutil
import subprocess
import sys

import desktop.core


def test_core_imports_no_qt_or_qasync() -> None:
    modules = [m.name for m in pkgutil.walk_packages(desktop.core.__path__, prefix="desktop.core.")]
    modules.append("desktop.cli")  # the headless entry point sits beside ui/, not in core
    assert "desktop.core.loop" in modules
    assert "desktop.core.providers.ollama" in modules  # sub-packages are walked too
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'qasync', 'shiboken6')"
        " or m.startswith('desktop.ui'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_cli_entry_imports_no_qt() -> None:
    code = (
        "import sys\n"
        "from desktop.__main__ import main\n"
        "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(any(m.startswith('PySide6') for m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip().endswith("False")
