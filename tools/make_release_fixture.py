#!/usr/bin/env python3
"""Writes the data dir a release leaves behind, for tests/app/test_upgrade.py to open later.

Run once per release, with that release checked out, and commit the output:

    python3 tools/make_release_fixture.py tests/fixtures/release-<version>

The real app writes it (`--self-test`: a chat through the embedded gateway), then the release's
own store and settings code add a draft with an attachment, a remote profile with its token and
a provider with its API key (files, as on a machine without a keyring).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Secrets go to the fallback files, never to the keyring of the machine running this.
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"

DRAFT_TEXT = "half-typed follow-up about the trip"
ATTACHMENT = b"packing list: tent, stove, 3 days of food\n"
PROFILE_TOKEN = "fixture-remote-token"
PROVIDER_KEY = "sk-fixture-provider-key"
PROVIDER_URL = "http://127.0.0.1:9/v1"


def main(out: Path) -> int:
    from desktop import __version__
    from desktop.app.preferences import Preferences
    from desktop.core.disk.attachments import AttachmentStore
    from desktop.core.disk.store import DraftRecord, Store
    from desktop.core.link.profiles import FileTokenStore, KeyringTokenStore
    from desktop.ui.settings.values import (
        AppSettings,
        ProfileKind,
        ProfileSettings,
        ProviderSettings,
    )

    if out.exists():
        shutil.rmtree(out)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    app = [sys.executable, "-m", "desktop", "--self-test", "--data-dir", str(out)]
    subprocess.run(app, check=True, env=env)
    data, config = out / "data", out / "config"
    store = Store(str(data / "hermes-qt.sqlite3"))
    (session,) = store.sessions("embedded")
    attachment = AttachmentStore(data, store=store).add(ATTACHMENT, "packing-list.txt")
    store.save_draft(
        DraftRecord(session.key, DRAFT_TEXT, cursor=10, attachments=(attachment,), revision=3)
    )
    store.close()
    prefs = Preferences(config, KeyringTokenStore(FileTokenStore(config / "tokens.json")))
    prefs.save(
        AppSettings(
            profiles=[
                ProfileSettings("embedded", "This computer"),
                ProfileSettings(
                    "work",
                    "Work gateway",
                    ProfileKind.REMOTE,
                    url="ws://127.0.0.1:9/api/ws",  # loopback: nothing listens, nothing leaves
                    token=PROFILE_TOKEN,
                ),
            ],
            providers=[
                # Loopback, nothing listening: the fixture never reaches out by itself.
                ProviderSettings("main", PROVIDER_URL, "gpt-x", PROVIDER_KEY)
            ],
            theme="dark",
        )
    )
    # Only what a user's data dir keeps: no logs, no WAL side files (checkpointed on close).
    shutil.rmtree(out / "state", ignore_errors=True)
    for runtime in ("gateway.log", "gateway-stderr.log", "gateway.lock"):
        (data / "gateway" / runtime).unlink(missing_ok=True)
    for db in data.rglob("*.sqlite3"):
        conn = sqlite3.connect(db)
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()  # the last connection removes the -wal and -shm files
    (out / "RELEASE.json").write_text(
        json.dumps({"version": __version__, "session": session.key}, indent=2) + "\n"
    )
    print(f"wrote the data dir of hermes-qt {__version__} to {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]).resolve()))
