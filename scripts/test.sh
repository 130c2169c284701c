#!/usr/bin/env bash
# Set up and run every test on a fresh machine: Python packages, Debian's chromium for the
# browser tests (never `playwright install`: no download), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
if ! [ -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null
fi
python -m pytest -q "$@"
