"""`python -m desktop.gateway`: run the embedded gateway."""

from __future__ import annotations

import sys

from desktop.common.deferred import defer_unused_modules

defer_unused_modules()

from desktop.gateway.cli import main  # noqa: E402  (after the stand-ins: it imports websockets)

if __name__ == "__main__":
    sys.exit(main())
