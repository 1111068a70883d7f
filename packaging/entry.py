"""PyInstaller entry point: runs the app's `main` (which also dispatches `gateway ...`)."""

from __future__ import annotations

import sys

from desktop.app.main import main

if __name__ == "__main__":
    sys.exit(main())
