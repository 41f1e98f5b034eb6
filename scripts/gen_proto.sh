#!/usr/bin/env bash
# Regenerates eagerflow/function/graph_pb2.py from graph.proto (development only).
#
# The generated module is committed, so users need only the protobuf runtime. It is made with
# protoc 25.x (grpcio-tools 1.62), whose output needs a runtime >= 3.20 and has no gencode
# version check, so it loads under every protobuf from 4.21 (pyproject's lower bound)
# through current releases. Newer protoc versions emit a check that refuses any runtime
# older than themselves.
#
# grpcio-tools is installed into a scratch directory with --no-deps so it cannot change the
# protobuf runtime of the environment.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${GRPC_TOOLS_DIR:-${TMPDIR:-/tmp}/eagerflow-grpc-tools}"
PYTHON="${PYTHON:-python}"

if ! PYTHONPATH="$TOOLS" "$PYTHON" -c "import grpc_tools.protoc" 2>/dev/null; then
  "$PYTHON" -m pip install --quiet --no-deps --target "$TOOLS" "grpcio-tools==1.62.3"
fi

cd "$ROOT"
PYTHONPATH="$TOOLS" "$PYTHON" -m grpc_tools.protoc -I. --python_out=. \
  eagerflow/function/graph.proto eagerflow/saved_model/saved_model.proto \
  eagerflow/io/example.proto
echo "wrote the _pb2.py modules ($(PYTHONPATH="$TOOLS" "$PYTHON" -m grpc_tools.protoc --version))"
