"""scripts/setup_browser.sh (run by `make test`) says which browser the browser tests use, with its
version, in one line and without the shell error Debian's chromium wrapper prints where /dev/shm
is mounted twice ("[: N: unexpected operator", from /etc/chromium.d/dev-shm)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers.chromium import find_chromium
from tests.helpers.common import REPO


def test_the_script_names_the_browser_and_its_version_without_a_shell_error() -> None:
    browser = find_chromium()
    if browser is None:  # the script would install one with apt-get: not from a test
        if os.environ.get("CI"):
            pytest.fail("no Chromium: `make test` installs it with scripts/setup_browser.sh; CI must have it")
        pytest.skip("no Chromium binary found (install it with scripts/setup_browser.sh, or set MAPS_CHROMIUM)")
    done = subprocess.run(["bash", str(REPO / "scripts" / "setup_browser.sh")], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"setup_browser: the browser tests use {browser} (") and ("Chromium" in line or "Chrome" in line)
