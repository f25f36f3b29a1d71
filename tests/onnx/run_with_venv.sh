#!/usr/bin/env bash
# Runs a command of the ONNX tests with the build tree's Python environment first on PATH, or
# skips (exit 77, ctest's SKIP_RETURN_CODE for these tests) printing why there is none.
#   run_with_venv.sh BUILD_DIR COMMAND [ARGS...]    (COMMAND "python" is the venv's python)
set -euo pipefail
build_dir="$1"
shift
status_file="$build_dir/python_env.status"
if [[ -f "$status_file" ]]; then
  status="$(head -n 1 "$status_file")"
else
  status="unavailable: $status_file is missing (scripts/setup or scripts/python_env makes the environment)"
fi
if [[ "$status" != ok ]]; then
  echo "SKIPPED: the ONNX tests need the Python environment <build>/venv: ${status#unavailable: }"
  exit 77
fi
export PATH="$build_dir/venv/bin:$PATH"
export PYTHONDONTWRITEBYTECODE=1
exec "$@"
