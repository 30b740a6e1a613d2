#!/usr/bin/env bash
# Install a Chromium for the `browser` tests (tests/report/test_view.py) from the system's packages.
# Quick when one is already installed; safe to run repeatedly; used by scripts/setup.sh.
# The tests drive it over the DevTools protocol on a pipe: no driver and no PyPI package needed.
set -euo pipefail

# The browser the tests will use (tests/helpers/chromium.py looks in the same order), or nothing.
find_browser() {
  local name
  for name in "${MAPS_CHROMIUM:-}" chromium chromium-browser google-chrome google-chrome-stable; do
    if [ -n "$name" ] && command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

# One line: the browser and its version. Debian's /usr/bin/chromium is a shell wrapper whose
# /etc/chromium.d/dev-shm check fails with "[: N: unexpected operator" where /dev/shm is mounted
# twice (containers), an error about the wrapper, not the browser: ask the browser binary the
# wrapper starts, when there is one.
say_browser() {
  local binary="$1" real=""
  if [ "$(head -c 2 "$binary" 2>/dev/null)" = "#!" ] && [ -x /usr/lib/chromium/chromium ]; then
    real=/usr/lib/chromium/chromium
  fi
  echo "setup_browser: the browser tests use $binary ($("${real:-$binary}" --version | head -n 1 | sed 's/ *$//'))"
}

if browser="$(find_browser)"; then
  say_browser "$browser"
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
echo "setup_browser: installing Chromium system-wide (${SUDO:+sudo }apt-get install chromium fonts-dejavu-core: about 300 MB with its libraries, a minute or two) for the viewer's browser tests (tests/report/test_view.py); \`maps\` itself never needs it" >&2

# No recommends: they pull in desktop services (avahi, cups, systemd) the headless tests never use.
# A font package keeps the screenshots readable on minimal images.
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
say_browser "$(find_browser)"
