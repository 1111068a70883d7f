"""The real app starts with settings files it cannot fully read, and loses nothing of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_the_app_starts_and_chats_with_unreadable_profiles_and_providers(tmp_path: Path) -> None:
    """profiles.json with a profile of an unknown kind and one whose `tls` is text, and a
    providers.json holding `null`: the app used to stop at start-up (AttributeError naming no
    file) and its embedded gateway to crash; now the self-test chats on the embedded gateway
    and both files are as they were."""
    config = tmp_path / "config"
    config.mkdir()
    profiles = [
        {"id": "p1", "name": "Quantum", "kind": "quantum"},
        {
            "id": "p2",
            "name": "Lab",
            "kind": "remote",
            "url": "wss://lab.example/api/ws",
            "tls": "on",
        },
    ]
    (config / "profiles.json").write_text(json.dumps(profiles))
    (config / "providers.json").write_text("null")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    proc = subprocess.run(
        [sys.executable, "-m", "desktop", "--self-test", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=50,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "self-test OK" in proc.stdout
    assert json.loads((config / "profiles.json").read_text()) == profiles
    assert (config / "providers.json").read_text() == "null"
    log = (tmp_path / "state" / "logs" / "hermes-qt.log").read_text()
    assert "a profile is set aside: unknown profile kind 'quantum'" in log
    assert "TLS settings are text, not a set of options" in log
