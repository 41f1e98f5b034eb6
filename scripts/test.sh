#!/usr/bin/env bash
# Installs what the tests need into a virtual environment (first run only) and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EAGERFLOW_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
# The mpi extra (mpi4py and the mpich wheel, which puts mpirun in $VENV/bin) lets the
# tests marked `mpi` start real mpirun jobs; without it they skip.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev,mpi]"
exec "$VENV/bin/python" -m pytest -q "$@"
