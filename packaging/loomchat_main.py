"""The packaged app's entry point (PyInstaller runs this file as a script)."""

import multiprocessing
import sys

if __name__ == "__main__":
    # Tools compute in worker processes (desktop.core.tools.isolation): in a frozen app the
    # fork server and its helpers start as this executable, and must stop here.
    multiprocessing.freeze_support()
    if sys.argv[1:2] == ["--sandbox-child"]:  # the code runner's child (tools/sandbox.py)
        from desktop.core.tools.sandbox_child import main as sandbox_child

        sandbox_child(sys.argv[2:])
        sys.exit(0)
    from desktop.__main__ import main

    sys.exit(main())
