"""loom.graph: the builder, ONNX import, compile and running on NumPy arrays."""
import numpy as np
import pytest

import loom


def mlp():
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 16)).astype("float32")
    w2 = rng.standard_normal((8, 32)).astype("float32")
    b = loom.graph.Builder("mlp")
    x = b.input("x", [4, 16])
    assert x.shape == [4, 16] and x.dtype == "float32"
    h = b.op("relu", b.op("dense", x, b.constant("w1", w1)))
    y = b.op("dense", h, b.constant("w2", w2), name="out")
    b.output(y)
    return b.build(), w1, w2


def test_builder_compile_run():
    g, w1, w2 = mlp()
    assert g.name == "mlp" and g.num_ops == 3
    assert g.inputs == [("x", [4, 16], "float32")]
    assert g.outputs[0][1:] == ([4, 8], "float32")
    assert '"op"' in g.to_json() or "dense" in g.to_json()
    m = loom.graph.compile(g)
    x = np.random.rand(4, 16).astype("float32")
    y = m(x)
    np.testing.assert_allclose(y, np.maximum(x @ w1.T, 0) @ w2.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(m(x=x), y, rtol=1e-6)
    assert m.kernels and "dense" in m.kernels[0].ops
    g2 = loom.graph.from_json(g.to_json())
    assert g2.num_ops == 3


def test_graph_save_load_and_export(tmp_path):
    g, _, _ = mlp()
    g.save(str(tmp_path / "mlp.json"))
    g2 = loom.graph.load(tmp_path / "mlp.json")
    m = loom.graph.compile(g2, log=[])
    m.export_library(tmp_path / "mlp.so")
    lib = loom.runtime.load_module(str(tmp_path / "mlp.so"))
    x = np.ones((4, 16), "float32")
    out = np.empty((4, 8), "float32")
    lib["run"](x, out)
    np.testing.assert_allclose(out, m(x), rtol=1e-5)


def test_builder_and_run_errors():
    b = loom.graph.Builder()
    x = b.input("x", [2, 3])
    with pytest.raises(loom.Error, match="no_such_op|operator"):
        b.op("no_such_op", x)
    with pytest.raises(loom.Error):
        b.op("dense", x, b.constant("w", np.ones((4, 5), "float32")))  # K differs
    with pytest.raises(loom.Error, match="attribute 'axis'"):
        b.op("softmax", x, axis=object())
    with pytest.raises(loom.Error):
        b.input("x", [1])  # a second node named x
    b.output(b.op("relu", x))
    m = loom.graph.compile(b.build())
    with pytest.raises(loom.Error, match="takes 1 inputs"):
        m()
    with pytest.raises(loom.Error):
        m(np.ones((3, 3), "float32"))  # wrong shape
    with pytest.raises(loom.Error, match="missing input"):
        m(y=np.ones((2, 3), "float32"))
    with pytest.raises(loom.Error):
        loom.graph.load("/nonexistent/model.onnx")


def onnx_model(path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 1, 1])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def test_import_onnx_compile_against_onnxruntime(tmp_path):
    if not loom.graph.onnx_frontend_available():
        pytest.skip("this loom was built without the ONNX frontend")
    ort = pytest.importorskip("onnxruntime")
    path = onnx_model(tmp_path / "tiny.onnx")
    g = loom.graph.import_onnx(path, input_shapes={"x": [2, 3, 16, 16]})
    assert g.inputs == [("x", [2, 3, 16, 16], "float32")]
    m = loom.graph.compile(g)
    x = np.random.rand(2, 3, 16, 16).astype("float32")
    expect = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(m(x), expect, rtol=1e-4, atol=1e-4)
    with pytest.raises(loom.Error, match="N|symbolic|dynamic|shape"):
        loom.graph.import_onnx(path)  # the batch dimension has no static size
