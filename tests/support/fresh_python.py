"""Code run in a fresh interpreter (what a process imports, loads or leaves behind)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any


def run_python(code: str, **env: str) -> Any:
    """Run `code` (dedented) in a fresh interpreter, offscreen; the JSON it prints last."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": "/usr/bin:/bin", "QT_QPA_PLATFORM": "offscreen", **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])
