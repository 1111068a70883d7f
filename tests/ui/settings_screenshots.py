"""Screenshots of the settings dialog for the README (manual, under Xvfb, real checks).

    xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m tests.ui.settings_screenshots

A fake OpenAI-compatible server stands in for LM Studio on its usual port and the embedded
gateway for a remote one; the dialog is the real one, and every result shown came from a real
request.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QRect
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from desktop.app.preferences import Preferences
from desktop.app.settings_checks import SettingsChecks
from desktop.core.link.profiles import FileTokenStore, ProfileKind
from desktop.gateway.providers.config import KeyStore
from desktop.gateway.providers.offline import OfflineProvider
from desktop.gateway.rpc.server import GatewayConfig, GatewayServer
from desktop.ui.settings.dialog import SettingsDialog
from desktop.ui.theme import ThemeManager, ThemeMode
from tests.support.fake_openai import FakeOpenAIServer
from tests.ui.e2e_support import until

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
MODELS = ["qwen2.5-7b-instruct", "llama-3.2-3b-instruct", "mistral-nemo-12b", "phi-4-mini"]
TOKEN = "screenshot-token-0123456789abcdef"


def shot(name: str, *widgets: QWidget) -> None:
    QApplication.processEvents()
    area = QRect()
    for w in widgets:
        area = area.united(QRect(w.mapToGlobal(w.rect().topLeft()), w.size()))
    screen = QApplication.primaryScreen()
    screen.grabWindow(0, area.x(), area.y(), area.width(), area.height()).save(str(OUT / name))
    print("saved", OUT / name)


async def pause() -> None:
    for _ in range(5):
        QApplication.processEvents()
        await asyncio.sleep(0.05)


async def main(root: Path) -> None:
    KeyStore.default = classmethod(lambda cls, d: cls(d, None))  # type: ignore[method-assign,assignment]
    prefs = Preferences(root, FileTokenStore(root / "tokens.json"))
    fake = FakeOpenAIServer("OK")
    fake.port = 1234  # where LM Studio's local server listens
    fake.models = MODELS
    gateway = GatewayServer(
        GatewayConfig(data_dir=root / "gw", token=TOKEN), OfflineProvider(chunk_interval=0.01)
    )
    with fake:
        url = await gateway.start()
        dialog = SettingsDialog(prefs.load(), prefs.save, checks=SettingsChecks(prefs, root, root))
        dialog.move(40, 40)
        dialog.show()
        page = dialog.providers_page
        dialog.tabs.setCurrentWidget(page)
        page._on_add_clicked()
        page.preset.setCurrentIndex(page.preset.findText("LM Studio (this computer)"))
        page.preset.activated.emit(page.preset.currentIndex())
        page.load_models.click()
        await until(lambda: page.result.text().startswith("✓"), "models")
        page.model.showPopup()
        await pause()
        popup = page.model.view().window()
        shot("settings-provider-models.png", dialog, popup)
        page.model.hidePopup()
        page.model.setCurrentIndex(0)
        page.test.click()
        await until(lambda: "answered" in page.result.text(), "test")
        await pause()
        shot("settings-provider-test.png", dialog)

        dialog.tabs.setCurrentIndex(0)
        dialog._on_add_profile_clicked()
        dialog.p_kind.setCurrentIndex(dialog.p_kind.findData(ProfileKind.REMOTE))
        dialog.p_name.setText("Home server")
        dialog.p_url.setText(url)
        dialog.p_token.setText(TOKEN)
        dialog.test_profile.click()
        await until(lambda: dialog.p_result.text().startswith("✓"), "connected")
        await pause()
        shot("settings-remote-profile.png", dialog)

        dialog.p_url.selectAll()
        QTest.keyClicks(dialog.p_url, "https://gateway.example.com/api/ws")
        dialog._on_buttons_accepted()
        await pause()
        shot("settings-invalid-url.png", dialog)
        dialog.p_url.selectAll()
        QTest.keyClicks(dialog.p_url, url)
        dialog._on_add_profile_clicked()
        dialog.p_kind.setCurrentIndex(dialog.p_kind.findData(ProfileKind.LOCAL_HERMES))
        dialog.p_name.setText("My Hermes")
        dialog.test_profile.click()
        await until(lambda: dialog.p_result.text().startswith("✗"), "hermes missing")
        await pause()
        shot("settings-local-hermes.png", dialog)
        dialog.reject()
        await gateway.stop()


def run() -> int:
    import qasync

    app = QApplication(sys.argv[:1])
    ThemeManager(app, ThemeMode.LIGHT)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    app.setQuitOnLastWindowClosed(False)
    with tempfile.TemporaryDirectory() as tmp, loop:
        loop.run_until_complete(main(Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(run())
