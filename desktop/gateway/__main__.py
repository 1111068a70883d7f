"""`python -m desktop.gateway`: run the embedded gateway."""

from __future__ import annotations

import sys

from desktop.gateway.cli import main

if __name__ == "__main__":
    sys.exit(main())
