"""`pip install` of the built wheel works as users install it, and an upgrade keeps their data.

`python -m build` makes the sdist and, from it, the wheel; the wheel goes (not editable) into a
fresh venv, and the installed commands run from outside the checkout with the user's default
data dirs. Then a newer wheel goes over it and must find every session the older one wrote.
Needs PyPI (the build backend and the dependencies; pip's cache makes repeats quick), so it runs
only with HERMES_QT_WHEEL_TEST=1 (.ci/run sets it).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from desktop import __version__
from tests.packaging.modules import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        os.environ.get("HERMES_QT_WHEEL_TEST") != "1",
        reason="set HERMES_QT_WHEEL_TEST=1 to build the wheel and install it into a fresh venv",
    ),
]

NEXT_VERSION = f"{__version__}.post1"


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path
    home: Path  # the user's home: data in ~/.local/share/hermes-qt, like a real install
    elsewhere: Path  # a working directory outside the checkout
    next_wheel: Path
    first_self_test: subprocess.CompletedProcess[str]


def _build(source: Path, out: Path) -> Path:
    """`python -m build`: the sdist, then the wheel built from that sdist; returns the wheel."""
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


def _next_release_source(tmp: Path) -> Path:
    """The same project with a higher version: what a later release installs over this one."""
    src = tmp / "next-src"
    shutil.copytree(ROOT / "desktop", src / "desktop", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "resources", src / "resources")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    init = src / "desktop" / "__init__.py"
    init.write_text(init.read_text().replace(f'"{__version__}"', f'"{NEXT_VERSION}"'))
    return src


def _user_env(home: Path) -> dict[str, str]:
    """A user's environment: no checkout on the path, default per-user dirs under `home`."""
    drop = {"PYTHONPATH", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), QT_QPA_PLATFORM="offscreen")
    return env


def _pip(venv: Path, home: Path, *args: str) -> None:
    # The user's environment: a checkout on PYTHONPATH would look like an installed hermes-qt.
    env = {**_user_env(home), "HOME": os.environ.get("HOME", str(home))}  # pip's own cache
    subprocess.run([str(venv / "bin/python"), "-m", "pip", *args], check=True, env=env, timeout=600)


def _run(venv: Path, home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=_user_env(home),
        cwd=cwd,
        timeout=180,
        check=False,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = _build(ROOT, tmp / "dist")
    next_wheel = _build(_next_release_source(tmp), tmp / "dist-next")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    home, elsewhere = tmp / "home", tmp / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    _pip(venv, home, "install", "-q", str(wheel))
    first = _run(venv, home, elsewhere, "hermes-qt", "--self-test")
    yield Installed(venv, wheel, home, elsewhere, next_wheel, first)


def _data(home: Path) -> Path:
    return home / ".local" / "share" / "hermes-qt"


def _sessions(installed: Installed) -> tuple[int, int]:
    """(sessions in the app's store, sessions in the embedded gateway's store)."""
    app = sqlite3.connect(_data(installed.home) / "hermes-qt.sqlite3")
    gateway = sqlite3.connect(_data(installed.home) / "gateway" / "gateway.sqlite3")
    try:
        return (
            app.execute("SELECT count(*) FROM sessions").fetchone()[0],
            gateway.execute("SELECT count(*) FROM sessions").fetchone()[0],
        )
    finally:
        app.close()
        gateway.close()


def test_the_sdist_carries_the_sources_resources_and_license(installed: Installed) -> None:
    (sdist,) = installed.wheel.parent.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    for name in (
        "pyproject.toml",
        "LICENSE",
        "setup.py",
        "desktop/app/main.py",
        "resources/themes/base.qss",
        "resources/icons/app.svg",
        "resources/hermes-qt.desktop",
    ):
        assert name in names, name


def test_the_wheel_carries_the_icons_and_themes(installed: Installed) -> None:
    site = subprocess.run(
        [str(installed.venv / "bin/python"), "-c", "import desktop; print(desktop.__file__)"],
        capture_output=True,
        text=True,
        env=_user_env(installed.home),
        cwd=installed.elsewhere,
        check=True,
    ).stdout.strip()
    package = Path(site).parent
    assert "site-packages" in package.parts  # a real install, not the checkout
    assert (package / "resources" / "themes" / "base.qss").is_file()
    assert (package / "resources" / "icons" / "app.svg").is_file()


# Run by the installed Python, outside the checkout: every icon and theme of resources/ loads
# from the installed package, and the app's look (a theme, icons, tinted too) is built from them.
_FINDS_EVERY_RESOURCE = """
import sys
from pathlib import Path
from PySide6.QtWidgets import QApplication
app = QApplication([])
from desktop.ui.platform.resources import icon, resource, resource_root
from desktop.ui.theme import ThemeManager, ThemeMode
root = str(resource_root())
assert "site-packages" in root, root
source, files = Path(sys.argv[1]), sys.argv[2:]
for rel in files:
    assert resource(*rel.split("/")).read_bytes() == (source / rel).read_bytes(), rel
    if rel.startswith("icons/"):
        name = rel.removeprefix("icons/").removesuffix(".svg")
        assert not icon(name).pixmap(32, 32).isNull(), rel
        assert not icon(name, "#aab3c2").pixmap(32, 32).isNull(), rel
ThemeManager(app, ThemeMode.DARK)
assert "chatView" in app.styleSheet()
print("found", len(files), "resources in", root)
"""


def test_the_installed_wheel_finds_every_resource(installed: Installed) -> None:
    """Each file of resources/icons and resources/themes is found by the installed app."""
    files = sorted(
        p.relative_to(ROOT / "resources").as_posix()
        for name in ("icons", "themes")
        for p in (ROOT / "resources" / name).rglob("*")
        if p.is_file()
    )
    proc = subprocess.run(
        [
            str(installed.venv / "bin/python"),
            "-c",
            _FINDS_EVERY_RESOURCE,
            str(ROOT / "resources"),
            *files,
        ],
        capture_output=True,
        text=True,
        env=_user_env(installed.home),
        cwd=installed.elsewhere,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"found {len(files)} resources in" in proc.stdout


def test_installed_app_passes_its_self_test_from_any_directory(installed: Installed) -> None:
    proc = installed.first_self_test
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "self-test OK" in proc.stdout
    assert _sessions(installed) == (1, 1)


def test_installed_gateway_command_answers_help(installed: Installed) -> None:
    proc = _run(installed.venv, installed.home, installed.elsewhere, "hermes-qt-gateway", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: hermes-qt-gateway")


def test_a_newer_wheel_over_it_keeps_every_session(installed: Installed) -> None:
    assert installed.first_self_test.returncode == 0
    before = _sessions(installed)
    _pip(installed.venv, installed.home, "install", "-q", str(installed.next_wheel))
    version = _run(installed.venv, installed.home, installed.elsewhere, "hermes-qt", "--version")
    assert version.stdout.strip() == f"hermes-qt {NEXT_VERSION}"
    assert _sessions(installed) == before  # the upgrade itself touched nothing
    proc = _run(installed.venv, installed.home, installed.elsewhere, "hermes-qt", "--self-test")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    # The newer app opened the older one's store and gateway sessions and added its own chat.
    assert _sessions(installed) == (before[0] + 1, before[1] + 1)
    # Uninstalling the program leaves the user's data alone.
    _pip(installed.venv, installed.home, "uninstall", "-q", "-y", "hermes-qt")
    assert not (installed.venv / "bin" / "hermes-qt").exists()
    assert _sessions(installed) == (before[0] + 1, before[1] + 1)
