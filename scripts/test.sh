#!/usr/bin/env bash
# Installs what the tests need into a virtual environment (first run only) and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EAGERFLOW_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev]"
exec "$VENV/bin/python" -m pytest -q "$@"
