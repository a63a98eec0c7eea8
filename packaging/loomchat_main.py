"""The packaged app's entry point (PyInstaller runs this file as a script)."""

import sys

from desktop.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
