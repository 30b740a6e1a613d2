#!/usr/bin/env bash
# Install a Chromium for the `browser` tests (tests/test_view.py) from the system's packages.
# Quick when one is already installed; safe to run repeatedly; used by scripts/setup.sh.
# The tests drive it over the DevTools protocol on a pipe: no driver and no PyPI package needed.
set -euo pipefail

have_browser() {
  local name
  for name in "${MAPS_CHROMIUM:-}" chromium chromium-browser google-chrome google-chrome-stable; do
    if [ -n "$name" ] && command -v "$name" >/dev/null 2>&1; then
      return 0
    fi
  done
  return 1
}

if have_browser; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  # Not Debian/Ubuntu: leave it to the user; the browser tests skip with a clear reason.
  echo "setup_browser: no apt-get here; install Chromium yourself (or set MAPS_CHROMIUM) to run the browser tests" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "setup_browser: installing Chromium (${SUDO:+sudo }apt-get install chromium fonts-dejavu-core) for the viewer's browser tests (tests/test_view.py); \`maps\` itself never needs it" >&2

# No recommends: they pull in desktop services (avahi, cups, systemd) the headless tests never use.
# A font package keeps the screenshots readable on minimal images.
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
