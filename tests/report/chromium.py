"""Headless Chromium screenshots of report pages (Debian's chromium; installed by scripts/setup.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def screenshot(page: Path, png: Path, tmp: Path, size: str = "1200,2400") -> Path:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("SEATRIAL_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is required here (CI) but not installed")
        pytest.skip("chromium not installed (scripts/setup.sh installs it as root)")
    cmd = [
        exe,
        *FLAGS,
        f"--user-data-dir={tmp / 'chromium-profile'}",
        f"--window-size={size}",
        f"--screenshot={png}",
        page.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return png


def drawn_pixels(png: Path) -> int:
    """Pixels that are neither white nor near-white: a page with plots drawn has many."""
    import matplotlib.image as mpimg

    img = mpimg.imread(str(png))[..., :3]
    return int((img.mean(axis=2) < 0.85).sum())
