#!/usr/bin/env bash
# The ctests onnx_node_tests and onnx_models_vs_ort: writes cases in ONNX's test layout into
# the build tree with a generator (gen_node_tests.py: ONNX's node tests, a no-op when they are
# current; gen_model_cases.py: the end-to-end models with ONNX Runtime's outputs), then runs
# them through loom with loom_onnx_node_tests.
#   run_cases.sh BUILD_DIR GENERATOR.py CASES_SUBDIR RUNNER [RUNNER ARGS...]
# (run through run_with_venv.sh, which puts the venv's python first on PATH)
set -euo pipefail
build_dir="$1"
generator="$2"
cases="$build_dir/$3"
runner="$4"
shift 4
python "$generator" "$cases"
exec "$runner" "$cases" "$@"
