"""Tests of the ONNX Python tooling: the model exporter (python/export_models.py), the ONNX
Runtime runner (python/ort_run.py), the loom-model-to-ONNX converter (python/graph_to_onnx.py)
and the node-test generator's selection (tests/onnx/gen_node_tests.py). Run by ctest as onnx_python_tools, through run_with_venv.sh."""
from __future__ import annotations

import json
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
import graph_to_onnx  # noqa: E402
import ort_run  # noqa: E402

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


def loom_model(nodes: list[dict], outputs: list, weights: str | None = None) -> dict:
    """A loom model file's document (docs/graph.md), as save_graph writes it."""
    doc = {"format": "loom.graph", "version": 1, "name": "t"}
    if weights:
        doc["weights"] = weights
    doc.update({"nodes": nodes, "outputs": outputs})
    return doc


def f32(shape, layout=None) -> dict:
    t = {"shape": list(shape), "dtype": "float32"}
    if layout:
        t["layout"] = layout
    return t


def const(name: str, a: np.ndarray) -> dict:
    return {"name": name, "kind": "constant", "type": f32(a.shape), "data": a.ravel().tolist()}


def op(name: str, o: str, inputs: list, attrs: dict, shape, layout=None) -> dict:
    return {"name": name, "op": o, "inputs": inputs, "attrs": attrs, "types": [f32(shape, layout)]}


class GraphToOnnxTest(unittest.TestCase):
    """The mappings the builder models do not exercise (those are checked against loom by the
    ctest onnx_models_vs_ort), computed by ONNX Runtime and compared with numpy; and errors."""

    def convert(self, doc: dict, d: str, weights: bytes | None = None) -> subprocess.CompletedProcess:
        path = os.path.join(d, "m.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        if weights is not None:
            with open(os.path.join(d, "m.weights"), "wb") as f:
                f.write(weights)
        return run(os.path.join(ROOT, "python", "graph_to_onnx.py"), path, os.path.join(d, "m.onnx"))

    def test_ops_match_numpy_through_onnx_runtime(self):
        rng = np.random.default_rng(3)
        x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
        b = rng.standard_normal(4).astype(np.float32)
        w = rng.standard_normal((3, 36)).astype(np.float32)
        s = rng.standard_normal((1, 1, 1, 6)).astype(np.float32)
        nodes = [
            {"name": "x", "kind": "input", "type": f32(x.shape, "NCHW")},
            const("b", b), const("w", w), const("s", s),
            op("biased", "bias_add", ["x", "b"], {"axis": 1, "layout": ""}, x.shape, "NCHW"),
            op("scaled", "multiply", ["biased", "s"], {}, x.shape, "NCHW"),
            op("shifted", "subtract", ["scaled", "x"], {}, x.shape, "NCHW"),
            op("sig", "sigmoid", ["shifted"], {}, x.shape, "NCHW"),
            op("pool", "avg_pool2d", ["sig"], {"count_include_pad": 1, "layout": "NCHW", "padding": [1, 1],
                                               "pool_size": [3, 3], "strides": [2, 2]}, (1, 4, 3, 3), "NCHW"),
            op("flat", "flatten", ["pool"], {"axis": 1}, (1, 36)),
            op("fc", "dense", ["flat", "w"], {}, (1, 3)),
            op("prob", "softmax", ["fc"], {"axis": -1}, (1, 3)),
        ]
        with tempfile.TemporaryDirectory() as d:
            r = self.convert(loom_model(nodes, ["prob", "pool"]), d)
            self.assertEqual(r.returncode, 0, r.stderr)
            got_prob, got_pool = ort_run.session(os.path.join(d, "m.onnx"), 1).run(None, {"x": x})
        v = 1 / (1 + np.exp(-((x + b.reshape(4, 1, 1)) * s - x)))
        p = np.pad(v, ((0, 0), (0, 0), (1, 1), (1, 1)))
        pool = np.zeros((1, 4, 3, 3), np.float32)
        for i in range(3):
            for j in range(3):
                pool[:, :, i, j] = p[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].mean(axis=(2, 3))  # pads count
        fc = pool.reshape(1, 36) @ w.T
        prob = np.exp(fc - fc.max()) / np.exp(fc - fc.max()).sum()
        np.testing.assert_allclose(got_pool, pool, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_prob, prob, rtol=1e-5, atol=1e-6)

    def test_unmappable_node_is_an_error_naming_it(self):
        x = {"name": "x", "kind": "input", "type": f32((1, 16, 4, 4), "NCHW")}
        with tempfile.TemporaryDirectory() as d:
            r = self.convert(loom_model([x, op("t", "layout_transform", ["x"], {"src_layout": "NCHW",
                                                                                "dst_layout": "NCHW16c"},
                                               (1, 1, 4, 4, 16), "NCHW16c")], ["t"]), d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("node 't' (layout_transform): no ONNX mapping for operator 'layout_transform'", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "m.onnx")))
            r = self.convert(loom_model([x, op("p", "max_pool2d", ["x"], {"layout": "NCHW16c", "padding": [0, 0],
                                                                         "pool_size": [2, 2], "strides": [2, 2]},
                                               (1, 1, 2, 2, 16), "NCHW16c")], ["p"]), d)
            self.assertEqual(r.returncode, 1)
            self.assertIn("node 'p' (max_pool2d): layout \"NCHW16c\"", r.stderr)

    def test_weights_file_is_checked(self):
        w = {"name": "w", "kind": "constant", "type": f32((128,)), "offset": 64, "nbytes": 512}
        nodes = [{"name": "x", "kind": "input", "type": f32((128,))}, w, op("y", "add", ["x", "w"], {}, (128,))]
        with tempfile.TemporaryDirectory() as d:
            r = self.convert(loom_model(nodes, ["y"], "m.weights"), d, b"NOTLOOM!" + bytes(568))
            self.assertEqual(r.returncode, 1)
            self.assertIn("is not a loom weights file", r.stderr)
            r = self.convert(loom_model(nodes, ["y"], "m.weights"), d, b"LOOMWGT1" + bytes(100))
            self.assertEqual(r.returncode, 1)
            self.assertIn("constant 'w': bytes [64, 576) do not fit", r.stderr)
            a = np.arange(128, dtype=np.float32)
            r = self.convert(loom_model(nodes, ["y"], "m.weights"), d, b"LOOMWGT1" + bytes(56) + a.tobytes())
            self.assertEqual(r.returncode, 0, r.stderr)
            (y,) = ort_run.session(os.path.join(d, "m.onnx"), 1).run(None, {"x": np.ones(128, np.float32)})
            np.testing.assert_array_equal(y, a + 1)


class NodeTestSelectionTest(unittest.TestCase):
    def test_every_node_case_is_kept(self):
        import warnings
        from onnx.backend.test.case.node import collect_testcases

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases = collect_testcases(None)
        for c in cases:
            self.assertEqual(gen_node_tests.selected(c), c.kind == "node" and c.model is not None, c.name)
        self.assertGreaterEqual(sum(gen_node_tests.selected(c) for c in cases), 1800)


if __name__ == "__main__":
    unittest.main(verbosity=2)
