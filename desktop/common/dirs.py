"""The per-user folders (per OS) the app and its embedded gateway keep their files in."""

from __future__ import annotations

from pathlib import Path

APP_NAME = "hermes-qt"


def user_data_dir() -> Path:
    import platformdirs  # on demand: --data-dir runs never need it

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_config_dir() -> Path:
    import platformdirs  # on demand: --data-dir runs never need it

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def user_state_dir() -> Path:
    import platformdirs  # on demand: --data-dir runs never need it

    return Path(platformdirs.user_state_dir(APP_NAME, appauthor=False))
