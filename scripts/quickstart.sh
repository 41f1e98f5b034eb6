#!/usr/bin/env bash
# The main job: set up a virtual environment (first run only) and train the quick-start
# model on the bundled digits, printing its test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EAGERFLOW_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e .
exec "$VENV/bin/python" tutorials/quickstart.py "$@"
