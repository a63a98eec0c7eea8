"""`python -m desktop`: the desktop app, or `python -m desktop run ...` for one headless turn."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["run"], ["calibrate"], ["-h"], ["--help"]):
        # The headless path never imports Qt.
        from desktop.cli import main as cli_main

        return cli_main(args)
    try:
        from desktop.ui.app import main as gui_main
    except ImportError as exc:
        sys.stderr.write(f"The desktop window is unavailable ({exc}); try: python -m desktop run\n")
        return 2
    return int(gui_main(args))


if __name__ == "__main__":
    sys.exit(main())
