"""Tests of loom's ONNX importer through `loom import`: valid models import (constant
subgraphs folded), malformed and unsupported ones give an error naming the node and what is
wrong, never a crash. Models are made with onnx.helper. Run by ctest as onnx_import:
    import_test.py PATH/TO/loom"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOOM = sys.argv.pop(1) if len(sys.argv) > 1 else "loom"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import export_models  # noqa: E402


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


class ImportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def loom_import(self, data, *args):
        path = os.path.join(self.tmp.name, "m.onnx")
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.SerializeToString())
        return subprocess.run([LOOM, "import", path, *args], capture_output=True, text=True, errors="replace", timeout=300)

    def assert_error(self, data, *needles):
        r = self.loom_import(data)
        self.assertEqual(r.returncode, 1, f"stdout: {r.stdout}\nstderr: {r.stderr}")
        for n in needles:
            self.assertIn(n, r.stderr)
        return r.stderr

    # ---- valid models
    def test_small_cnn_imports_and_writes_json(self):
        w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                 helper.make_node("Relu", ["c"], ["y"], name="relu")]
        m = model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [w])
        out = os.path.join(self.tmp.name, "m.json")
        r = self.loom_import(m, "-o", out, "--print")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("conv2d(", r.stdout)
        self.assertIn("relu(", r.stdout)
        with open(out) as f:
            g = json.load(f)
        self.assertIn("nodes", g)

    def test_shape_arithmetic_folds_at_import(self):
        m, _ = export_models.bert_layer(0, 8, hidden=16, heads=2, ffn=32)
        r = self.loom_import(m, "--print")
        self.assertEqual(r.returncode, 0, r.stderr)
        # Shape -> Gather -> Unsqueeze -> Concat became a constant feeding the head split.
        for op in ("take(", "concat(", "unsqueeze("):
            self.assertNotIn(op, r.stdout)
        self.assertIn("layer_norm(", r.stdout)
        self.assertIn("batch_matmul(", r.stdout)
        # The bias adds read the matmuls directly (moved before MatMul's reshape back to 3-D),
        # so that they fuse as the matmuls' epilogues.
        import re
        bias_adds = re.findall(r"= add\(%(\S+), %\S+\.bias\)", r.stdout)
        self.assertEqual(len(bias_adds), 6, r.stdout)
        for a in bias_adds:
            self.assertRegex(r.stdout, rf"%{re.escape(a)} = matmul\(")

    def test_dynamic_input_needs_a_shape(self):
        nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
        m = model(nodes, [vi("x", ["N", 4])], [vi("y", ["N", 4])])
        self.assertIn("dim 0 is dynamic ('N')", self.assert_error(m))
        r = self.loom_import(m, "--input-shape", "x=2,4", "--print")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("float32[2,4]", r.stdout)

    # ---- malformed files
    def test_truncated_file(self):
        w = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
        m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [2, 64])], [vi("y", [2, 64])], [w])
        data = m.SerializeToString()
        self.assert_error(data[: len(data) // 2], "not a valid ONNX model")
        self.assert_error(b"", "has no graph")
        self.assert_error(b"\xff\xff\xff\xff garbage", "not a valid ONNX model")

    def test_wrong_field_types(self):
        # ModelProto.graph (field 7) written as a varint instead of a message.
        self.assert_error(bytes([0x38, 0x05]), "has no graph")
        # An attribute of the wrong type: Conv's group as a float.
        w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv7")
        node.attribute.append(helper.make_attribute("group", 1.0))
        m = model([node], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])
        self.assert_error(m, "node #0 'conv7' (Conv)", "attribute 'group' has type FLOAT, expected INT")
        # An initializer whose data does not fit its dims.
        bad = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
        bad.dims[0] = 5
        m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c")], [vi("x", [1, 3, 8, 8])],
                  [vi("y", [1, 5, 6, 6])], [bad])
        self.assert_error(m, "tensor 'w'", "bytes of data")

    def test_missing_initializer(self):
        nodes = [helper.make_node("Add", ["x", "bias"], ["y"], name="add_bias")]
        m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])])
        self.assert_error(m, "node #0 'add_bias' (Add)", "input 1 'bias' is not a graph input, an initializer or any node's output")

    def test_cycle(self):
        nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                 helper.make_node("Relu", ["a"], ["b"], name="second"),
                 helper.make_node("Relu", ["a"], ["y"], name="third")]
        m = model(nodes, [vi("x", [2])], [vi("y", [2])])
        self.assert_error(m, "is on a cycle", "'first' (Add)")

    def test_output_not_computed(self):
        m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])], [vi("z", [2])])
        self.assert_error(m, "graph output 'z' is not computed by any node")

    def test_declared_output_shape_is_checked(self):
        m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2, 3])], [vi("y", [3, 2])])
        self.assert_error(m, "graph output 'y' is declared with shape [3,2] but the import infers [2,3]")

    def test_shape_mismatch_names_the_node(self):
        nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="bad_add")]
        m = model(nodes, [vi("x", [2, 3]), vi("z", [4, 3])], [vi("y", [2, 3])])
        self.assert_error(m, "node #0 'bad_add' (Add)", "neither match nor broadcast")

    # ---- unsupported
    def test_unsupported_operator(self):
        m = model([helper.make_node("Hardmax", ["x"], ["y"], name="hm")], [vi("x", [2, 3])], [vi("y", [2, 3])])
        self.assert_error(m, "node #0 'hm' (Hardmax)", "operator Hardmax is not supported", "Conv")

    def test_unsupported_attribute_and_value(self):
        node = helper.make_node("Relu", ["x"], ["y"], name="r", alpha=0.5)
        m = model([node], [vi("x", [2])], [vi("y", [2])])
        self.assert_error(m, "node #0 'r' (Relu)", "attribute 'alpha' is not supported")
        node = helper.make_node("Pad", ["x", "p"], ["y"], name="pad_reflect", mode="reflect")
        p = numpy_helper.from_array(np.array([1, 1], np.int64), "p")
        m = model([node], [vi("x", [4])], [vi("y", [6])], [p])
        self.assert_error(m, "node #0 'pad_reflect' (Pad)", "mode 'reflect'")

    def test_unsupported_dtype_and_opset(self):
        m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2], TensorProto.BFLOAT16)],
                  [vi("y", [2], TensorProto.BFLOAT16)])
        self.assert_error(m, "graph input 'x'", "element type BFLOAT16 is not supported")
        m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])], [vi("y", [2])], opset=11)
        self.assert_error(m, "opset 11 is older than 13")

    def test_quantization_errors_name_the_node(self):
        s = numpy_helper.from_array(np.array([0.1, 0.2], np.float32), "s")
        nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q", axis=1)]
        m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3], TensorProto.UINT8)], [s], opset=19)
        self.assert_error(m, "node #0 'q' (QuantizeLinear)", "y_scale [2] is neither one value nor one per element of axis 1")
        zp = numpy_helper.from_array(np.array([1], np.int8), "zp")
        nodes = [helper.make_node("DequantizeLinear", ["x", "s1", "zp"], ["y"], name="dq")]
        s1 = numpy_helper.from_array(np.array([0.5], np.float32), "s1")
        m = model(nodes, [vi("x", [2, 3], TensorProto.UINT8)], [vi("y", [2, 3])], [s1, zp], opset=19)
        self.assert_error(m, "node #0 'dq' (DequantizeLinear)", "x is uint8 but its zero point is int8")

    def test_non_constant_shape_input(self):
        nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="dyn_reshape")]
        m = model(nodes, [vi("x", [2, 3]), vi("s", [2], TensorProto.INT64)], [vi("y", [3, 2])])
        self.assert_error(m, "node #0 'dyn_reshape' (Reshape)", "shape (input 1 's') is computed at run time")

    def test_random_damage_never_crashes(self):
        # Bytes flipped at random in a valid model: an error or an import, never a crash.
        m, _ = export_models.resnet18(0, 32, 10)
        data = bytearray(m.SerializeToString())
        rng = np.random.default_rng(7)
        for trial in range(30):
            d = bytearray(data)
            # Nodes are serialized first and the graph's inputs/outputs last: damage both ends.
            for pos in rng.integers(0, 4096, size=4):
                d[int(pos) if trial % 2 == 0 else len(d) - 1 - int(pos)] = int(rng.integers(0, 256))
            r = self.loom_import(bytes(d))
            self.assertIn(r.returncode, (0, 1), f"trial {trial}: exit {r.returncode}\n{r.stderr[-2000:]}")
            if r.returncode == 1:
                self.assertIn("loom import: error: onnx:", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
