"""Helpers of the browser tests (a module, since conftest files are not imported by name)."""

from __future__ import annotations

from pathlib import Path

from support import ROOT

SCREENSHOTS = ROOT / "out" / "screenshots"
WIDTH = 1280


def full_page_screenshot(driver, name: str, width: int = WIDTH, max_height: int = 8000) -> Path:
    """The whole page as out/screenshots/NAME.png; the window stays at the page's size, so layout read
    afterwards matches the picture."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(width, 1000)
    chrome = 1000 - driver.execute_script("return window.innerHeight")  # the window is taller than its viewport
    height = min(driver.execute_script("return document.documentElement.scrollHeight"), max_height)
    driver.set_window_size(width, height + chrome)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
