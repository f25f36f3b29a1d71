#!/usr/bin/env bash
# The onnx_node_tests ctest: writes ONNX's backend node tests of the imported operators into
# the build tree (gen_node_tests.py, a no-op when they are current) and runs them through loom.
#   run_node_tests.sh BUILD_DIR RUNNER [RUNNER ARGS...]   (with the venv's python on PATH)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="$1"
runner="$2"
shift 2
python "$here/gen_node_tests.py" "$build_dir/onnx_node_tests"
exec "$runner" "$build_dir/onnx_node_tests" --skips "$here/node_test_skips.txt" "$@"
