"""A data dir written by the previous release opens with this code: nothing the user had is lost.

tests/fixtures/release-<version>/ is what that release's app left behind
(tools/make_release_fixture.py): a chat in the store and in the embedded gateway, a draft with an
attachment, a remote profile with its token, a provider with its API key. The store migrates
forward (PRAGMA user_version) when this code has newer migrations; then the real app runs on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from desktop.app.preferences import Preferences
from desktop.core.disk.attachments import AttachmentStore
from desktop.core.disk.migrations import LATEST
from desktop.core.disk.store import Store
from desktop.core.link.profiles import FileTokenStore, ProfileKind
from desktop.gateway.providers.config import KeyStore, read_settings
from tests.support.fake_openai import FakeOpenAIServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# The newest release recorded; versions compare as numbers (0.10 after 0.9).
PREVIOUS = max(
    FIXTURES.glob("release-*"),
    key=lambda p: tuple(int(x) for x in p.name.removeprefix("release-").split(".")),
)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import make_release_fixture as written  # noqa: E402


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "hermes-qt"
    shutil.copytree(PREVIOUS, copy)
    return copy


def _release() -> dict[str, str]:
    release: dict[str, str] = json.loads((PREVIOUS / "RELEASE.json").read_text())
    return release


def _gateway_sessions(root: Path) -> int:
    conn = sqlite3.connect(root / "data" / "gateway" / "gateway.sqlite3")
    try:
        return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    finally:
        conn.close()


def test_previous_release_store_migrates_forward_keeping_sessions_drafts_attachments(
    data_dir: Path,
) -> None:
    conn = sqlite3.connect(data_dir / "data" / "hermes-qt.sqlite3")
    written_at = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert 1 <= written_at <= LATEST
    key = _release()["session"]
    with Store(str(data_dir / "data" / "hermes-qt.sqlite3")) as store:
        assert store.version == LATEST
        session = store.session("embedded", key)
        assert session is not None and session.message_count == 2
        texts = [m.text for m in store.messages("embedded", key)]
        assert texts[0] == "self-test: please answer" and texts[1]
        draft = store.draft(key)
        assert draft is not None
        assert (draft.text, draft.cursor, draft.revision) == (written.DRAFT_TEXT, 10, 3)
        (attachment,) = draft.attachments
        assert attachment.filename == "packing-list.txt"
        copy = AttachmentStore(data_dir / "data", store=store).path_for(attachment.sha256)
        assert copy.read_bytes() == written.ATTACHMENT
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == attachment.sha256
        assert {h.session_key for h in store.search("embedded", "please answer")} == {key}


def test_previous_release_profiles_tokens_and_provider_keys_are_read(data_dir: Path) -> None:
    config = data_dir / "config"
    tokens = FileTokenStore(config / "tokens.json")
    profiles = {p.id: p for p in Preferences(config, tokens).profiles()}
    assert set(profiles) == {"embedded", "work"}
    work = profiles["work"]
    assert (work.kind, work.name, work.url) == (
        ProfileKind.REMOTE,
        "Work gateway",
        "ws://127.0.0.1:9/api/ws",
    )
    assert work.token_ref is not None and tokens.get(work.token_ref) == written.PROFILE_TOKEN
    (provider,) = read_settings(config)
    assert (provider.name, provider.base_url, provider.model) == (
        "main",
        written.PROVIDER_URL,
        "gpt-x",
    )
    assert KeyStore(config, None).get(provider.key_ref) == written.PROVIDER_KEY
    assert Preferences(config, tokens).preference("theme", "system") == "dark"


@pytest.mark.slow
def test_this_app_runs_on_the_previous_release_data_dir_and_keeps_it(data_dir: Path) -> None:
    key = _release()["session"]
    before_gateway = _gateway_sessions(data_dir)
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        # No keyring on the test machine either: the release's fallback files stay the source.
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    providers = data_dir / "config" / "providers.json"
    with FakeOpenAIServer(reply="Upgraded and answering.") as fake:
        # The provider the user configured in the old release, now at a live (fake) address;
        # it refuses any request without the API key the old release stored.
        fake.api_key = written.PROVIDER_KEY
        providers.write_text(providers.read_text().replace(written.PROVIDER_URL, fake.base_url))
        proc = subprocess.run(
            [sys.executable, "-m", "desktop", "--self-test", "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            env=env,
            timeout=50,
            check=False,
        )
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        assert fake.streams_done >= 1  # the reply came from the user's provider, with their key
    with Store(str(data_dir / "data" / "hermes-qt.sqlite3")) as store:
        keys = {s.key for s in store.sessions("embedded")}
        assert key in keys and len(keys) == 2  # the old chat and the self-test's new one
        new_key = (keys - {key}).pop()
        assert [m.text for m in store.messages("embedded", new_key)][-1] == (
            "Upgraded and answering."
        )
        assert store.messages("embedded", key)[0].text == "self-test: please answer"
        draft = store.draft(key)
        assert draft is not None and draft.text == written.DRAFT_TEXT
        assert len(draft.attachments) == 1
    # The embedded gateway kept the old chat and added the new one.
    assert _gateway_sessions(data_dir) == before_gateway + 1
    tokens = json.loads((data_dir / "config" / "tokens.json").read_text())
    assert written.PROFILE_TOKEN in tokens.values()
