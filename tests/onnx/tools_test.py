"""Tests of the ONNX Python tooling: the model exporter (python/export_models.py), the ONNX
Runtime runner (python/ort_run.py) and the node-test generator's selection
(tests/onnx/gen_node_tests.py). Run by ctest as onnx_python_tools, through run_with_venv.sh."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))

import export_models  # noqa: E402
import gen_node_tests  # noqa: E402

SMALL = ["--image-size", "32", "--classes", "10", "--seq", "16", "--hidden", "64", "--heads", "4", "--ffn", "128"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True)


def trainable_params(model: onnx.ModelProto) -> int:
    """Parameters as torch counts them: batch-norm running statistics are buffers."""
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer
               if not t.name.endswith(("running_mean", "running_var")) and t.data_type == onnx.TensorProto.FLOAT
               and len(t.dims) > 0)


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.out = cls.dir.name
        r = run(os.path.join(ROOT, "python", "export_models.py"), cls.out, *SMALL)
        if r.returncode != 0:
            raise AssertionError(r.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_structures_match_torchvision(self):
        # torchvision.models.resnet18() and mobilenet_v2() have 11,689,512 and 3,504,872
        # parameters with 1000 classes; the exporter's graphs must have the same layers.
        resnet, _ = export_models.resnet18(0, 224)
        self.assertEqual(trainable_params(resnet), 11_689_512)
        mobilenet, _ = export_models.mobilenet_v2(0, 224)
        self.assertEqual(trainable_params(mobilenet), 3_504_872)
        convs = [n for n in resnet.graph.node if n.op_type == "Conv"]
        self.assertEqual(len(convs), 20)  # 1 stem + 16 in blocks + 3 downsample
        self.assertEqual(sum(n.op_type == "BatchNormalization" for n in resnet.graph.node), 20)
        depthwise = [n for n in mobilenet.graph.node if n.op_type == "Conv"
                     and next(a.i for a in n.attribute if a.name == "group") > 1]
        self.assertEqual(len(depthwise), 17)
        self.assertEqual(sum(n.op_type == "Add" for n in mobilenet.graph.node), 10)

    def test_bert_layer_shape(self):
        m, inputs = export_models.bert_layer(0, 128)
        self.assertEqual(inputs, [("hidden_states", [1, 128, 768])])
        self.assertEqual(m.opset_import[0].version, 17)
        ops = [n.op_type for n in m.graph.node]
        for op in ("Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Softmax", "Erf", "LayerNormalization"):
            self.assertIn(op, ops)
        # q, k, v, attention output, FFN in and out: 2*768*768*4 + 2*768*3072 weights.
        weights = sum(int(np.prod(t.dims)) for t in m.graph.initializer if len(t.dims) == 2)
        self.assertEqual(weights, 4 * 768 * 768 + 2 * 768 * 3072)

    def test_deterministic(self):
        with tempfile.TemporaryDirectory() as other:
            r = run(os.path.join(ROOT, "python", "export_models.py"), other, *SMALL)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name in os.listdir(self.out):
                with open(os.path.join(self.out, name), "rb") as a, open(os.path.join(other, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)
        m0, _ = export_models.resnet18(0, 32, 10)
        m1, _ = export_models.resnet18(1, 32, 10)
        self.assertNotEqual(m0.graph.initializer[0].raw_data, m1.graph.initializer[0].raw_data)

    def test_onnx_runtime_runs_them_with_sane_outputs(self):
        for name, shape in (("resnet18", (1, 10)), ("mobilenet_v2", (1, 10)), ("bert_layer", (1, 16, 64))):
            with self.subTest(model=name), tempfile.TemporaryDirectory() as res:
                r = run(os.path.join(ROOT, "python", "ort_run.py"), os.path.join(self.out, f"{name}.onnx"),
                        "--inputs", os.path.join(self.out, f"{name}.input_0.npy"), "--out", res,
                        "--repeat", "2", "--warmup", "1", "--json", os.path.join(res, "latency.json"))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("median", r.stdout)
                y = np.load(os.path.join(res, "output_0.npy"))
                self.assertEqual(y.shape, shape)
                self.assertTrue(np.all(np.isfinite(y)))
                self.assertGreater(float(np.std(y)), 0.05)
                self.assertLess(float(np.max(np.abs(y))), 1000.0)
                self.assertTrue(os.path.exists(os.path.join(res, "latency.json")))

    def test_ort_run_rejects_wrong_inputs(self):
        model = os.path.join(self.out, "resnet18.onnx")
        r = run(os.path.join(ROOT, "python", "ort_run.py"), model)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has 1 inputs (data), 0 .npy files given", r.stderr)
        r = run(os.path.join(ROOT, "python", "ort_run.py"), model, "--inputs",
                os.path.join(self.out, "bert_layer.input_0.npy"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("input 'data' wants [1, 3, 32, 32]", r.stderr)

    def test_exporter_rejects_bad_arguments(self):
        with tempfile.TemporaryDirectory() as d:
            r = run(os.path.join(ROOT, "python", "export_models.py"), d, "--models", "vgg16")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("unknown model 'vgg16'", r.stderr)
            r = run(os.path.join(ROOT, "python", "export_models.py"), d, "--models", "bert_layer", "--hidden", "100",
                    "--heads", "12")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("not a multiple of --heads", r.stderr)


class NodeTestSelectionTest(unittest.TestCase):
    def test_every_listed_operator_has_cases_and_none_is_dropped(self):
        import warnings
        from onnx.backend.test.case.node import collect_testcases

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases = collect_testcases(None)
        kept = [c for c in cases if gen_node_tests.selected(c)]
        kept_ops = {op for c in kept for op in gen_node_tests.ops_of(c.model)}
        self.assertEqual(kept_ops, set(gen_node_tests.SUPPORTED_OPS))
        # Every single-node case of a listed operator is kept, and nothing else.
        for c in cases:
            ops = gen_node_tests.ops_of(c.model)
            if len(ops) == 1:
                self.assertEqual(gen_node_tests.selected(c), ops[0] in gen_node_tests.SUPPORTED_OPS, c.name)
        self.assertGreaterEqual(len(kept), 360)


if __name__ == "__main__":
    unittest.main(verbosity=2)
