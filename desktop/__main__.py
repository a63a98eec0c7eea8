"""`python -m desktop`: the window with no arguments (or `gui [Qt options]`); every other
word is a command of the headless CLI (`desktop/cli.py`: `run`, `calibrate`, ...), where an
unknown one is a usage error (exit 2), never the window."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] != "gui":
        # The headless path never imports Qt.
        from desktop.cli import main as cli_main

        return cli_main(args)
    try:
        from desktop.ui.app import main as gui_main
    except ImportError as exc:
        sys.stderr.write(f"The desktop window is unavailable ({exc}); try: python -m desktop run\n")
        return 2
    return int(gui_main(args[1:]))


if __name__ == "__main__":
    sys.exit(main())
