"""Headless Chromium (Debian's chromium + chromium-driver) driven by selenium, for the HTML report tests.

Without chromium, chromedriver or selenium these tests fail under CI (``CI`` set, as .ci/run runs) and
are skipped elsewhere with a message saying what to install. Screenshots go to out/screenshots/.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL = "apt-get install -y chromium chromium-driver && pip install selenium"
# The machine's launch flags: no sandbox (root in a container), no GPU, nothing fetched in the background.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars")
WIDTH = 1280


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in item.nodeid:
            item.add_marker(pytest.mark.browser)


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: runs in headless Debian chromium (apt: chromium chromium-driver; pip: selenium)")


def _binary(name: str) -> str | None:
    return shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)


def _missing() -> list[str]:
    missing = [name for name in ("chromium", "chromedriver") if _binary(name) is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium")
    return missing


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    missing = _missing()
    if missing:
        message = f"the browser tests need {', '.join(missing)}: {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _binary("chromium")
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="mldebug-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={WIDTH},1000")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=_binary("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
