"""The tutorials of examples/python, each run as a script (smaller sizes)."""
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python")


def run(script, *args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], cwd=cwd, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout
    return r.stdout


def test_tensor_expression_tutorial(tmp_path):
    out = run("tensor_expression.py", "--size", "128", "--print-ir", cwd=tmp_path)
    assert "vector add of 2048: correct" in out
    for step in ["default", "blocking", "vectorize", "permute", "parallel", "cache"]:
        assert f"  {step}" in out
    assert "func mm(" in out


def test_tune_matmul_tutorial(tmp_path):
    out = run("tune_matmul.py", "--size", "64", "--trials", "4", "--quick", "--log", "mm.jsonl", cwd=tmp_path)
    assert "tuned: 4 trials" in out and "deployed library: correct" in out
    assert (tmp_path / "mm.jsonl").read_text().count("\n") == 4


def test_onnx_model_tutorial(tmp_path):
    pytest.importorskip("onnxruntime")
    import loom
    if not loom.graph.onnx_frontend_available():
        pytest.skip("this loom was built without the ONNX frontend")
    out = run("onnx_model.py", "--batch", "2", cwd=tmp_path)
    assert "loom and ONNX Runtime agree" in out
