"""The AppStream metainfo next to the .desktop file is valid and names this release."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from desktop import __version__
from tests.packaging.modules import RESOURCES, load

deb = load("deb_package")
METAINFO = RESOURCES / deb.METAINFO_NAME


def test_metainfo_lists_this_version_as_the_newest_release_and_launches_the_menu_entry() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == METAINFO.name.removesuffix(".metainfo.xml")
    releases = root.findall("releases/release")
    assert releases and releases[0].get("version") == __version__
    launchable = root.findtext("launchable")
    assert launchable is not None and (RESOURCES / launchable).is_file()
    assert root.findtext("provides/binary") == "hermes-qt"


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="needs appstreamcli (appstream)")
def test_appstreamcli_validates_the_metainfo() -> None:
    proc = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(METAINFO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
