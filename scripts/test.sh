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
# Two workers (pytest-xdist): the browser tests wait on the app's reruns most of the time, so two halves of
# the suite overlap on a 2-core machine (14.8 min in one process at c023f5f). Each worker starts its own servers.
python -m pytest -q -n 2 "$@"
