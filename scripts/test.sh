#!/usr/bin/env bash
# Set up and run every test on a fresh machine: Python packages, Debian's chromium for the
# browser tests (never `playwright install`: no download), Debian's redis-server for the
# rooms (the tests start their own on a free port, nothing written to disk) and npm for axe-core
# (the accessibility checks' engine: package.json and its lock, into node_modules/), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-dev.txt
MISSING=""
[ -x /usr/bin/chromium ] || MISSING="$MISSING chromium"
command -v redis-server >/dev/null || MISSING="$MISSING redis-server"
command -v npm >/dev/null || MISSING="$MISSING npm"
if [ -n "$MISSING" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $MISSING >/dev/null
fi
npm ci --no-audit --no-fund --loglevel=error    # axe-core, exactly the lock's version (tests/e2e/axe.py)
# Two workers (pytest-xdist): the browser tests wait on the app's reruns most of the time, so two halves of
# the suite overlap on a 2-core machine (14.8 min in one process at c023f5f). Each worker starts its own servers;
# worksteal: a worker left idle at the end takes tests from the other (the long browser walks come last).
python -m pytest -q -n 2 --dist worksteal "$@"
