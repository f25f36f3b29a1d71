"""The rest of the API: the less common schedule primitives, handles' properties, records'
fields, the tensor intrinsics and reading models from files."""
import numpy as np
import pytest

import loom
from loom import te


def test_stage_primitives_rest():
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2, name="B", tag="scale", attrs={"note": "x"})
    C = te.compute((n, n), lambda i, j: B[i, j] + 1, name="C")
    assert B.op.tag == "scale" and B.op.attrs == {"note": "x"} and B.op.num_outputs == 1
    s = loom.create_schedule([C])
    assert [o.name for o in s.outputs] == ["C"]
    assert [st.name for st in s.stages] == ["A", "B", "C"]
    assert s[B].origin_op == B.op and s[B].op == B.op
    s[B].storage_align(s[B].op.axis[0], 16, 1)
    s[B].compute_root()
    s[C].pragma(s[C].op.axis[0], "unroll_explicit", 0)
    s[C].unroll(s[C].axis(1))
    ir = str(loom.lower(s, [A, C]))
    assert "B[" in ir
    copy = s.copy()
    copy[C].parallel(copy[C].op.axis[0])
    assert "parallel" not in str(loom.lower(s, [A, C]))
    assert "parallel" in str(loom.lower(copy, [A, C]))
    f = loom.build(s, [A, C])
    a = np.random.rand(n, n).astype("float32")
    c = np.empty((n, n), "float32")
    f(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    k = te.reduce_axis(8, "k")
    assert k.dom == (0, 8)
    P = te.compute((n,), lambda i: te.prod(A[i, k] + 1.0, axis=k), name="P")
    assert "P" in str(loom.lower(loom.create_schedule(P), [A, P]))


def test_gpu_primitives_lower():
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] + 1, name="B")
    s = loom.create_schedule(B)
    AA = s.cache_read(A, "shared", [B])
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x", (0, 32)))
    s[AA].compute_at(s[B], bx)
    s[AA].set_scope("shared")
    s[AA].double_buffer()
    ir = str(loom.lower(s, [A, B], target="cuda"))
    assert "shared" in ir
    with pytest.raises(loom.Error, match="double_buffer an output"):
        loom.create_schedule(B)[B].double_buffer()
    for make in (te.intrin.wmma_load_a, te.intrin.wmma_load_b, te.intrin.wmma_mma, te.intrin.wmma_store):
        assert make().name.startswith("wmma")
    for make in (te.intrin.mma_load_a, te.intrin.mma_load_b, te.intrin.mma_m16n8k16, te.intrin.mma_store):
        assert make().name.startswith("mma")


def test_compute_padded():
    # A cache of A computed in tiles of 8 rows over 30 rows, padded with zeros past row 29.
    n, m = 30, 16
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    s = loom.create_schedule(B)
    AA = s.cache_read(A, "global", [B])
    io, ii = s[B].split(B.op.axis[0], factor=8)
    s[AA].compute_at(s[B], io)
    s[AA].compute_padded(0.0)
    f = loom.build(s, [A, B])
    a = np.random.rand(n, m).astype("float32")
    b = np.empty((n, m), "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    with pytest.raises(loom.Error, match="compute_padded an output"):
        loom.create_schedule(B)[B].compute_padded()


def test_handles():
    i = te.var("i")
    e = te.Expr(3)
    assert e.value == 3 and e.same_as(e) and not e.same_as(te.Expr(3))
    assert repr(i) == "Var(i)" and i.name == "i"
    k = te.reduce_axis((2, 10), "k")
    assert k.dom == (2, 8) and k.var.name == "k" and str(k) == "k" and "IterVar" in repr(k)
    assert str(k * 2 + 1) and str(1 - k) and str(k // 2) and str(k % 2)
    A = te.placeholder((4, te.var("n")), name="A")
    assert A.shape[0] == 4 and isinstance(A.shape[1], te.Expr)
    assert "Tensor(A" in repr(A) and "Operation(A)" == repr(A.op)
    assert te.thread_axis("vthread").kind == "thread"


def test_task_instantiate_index_and_records_fields(tmp_path):
    task = loom.Task("matmul", [16, 16, 16])
    s, args = task.instantiate(1)
    f = loom.build(s, args, name="mm")
    a = np.random.rand(16, 16).astype("float32")
    c = np.empty((16, 16), "float32")
    f(a, a, c)
    np.testing.assert_allclose(c, a @ a, rtol=1e-5)
    with pytest.raises(loom.Error):
        task.instantiate(task.space_size)
    log = tmp_path / "l.jsonl"
    loom.tune(task, trials=2, log=log, tuner="grid", jobs=1, repeat=1, min_repeat_ms=1, confirm=0, quiet=True)
    r = loom.records.read_log(log)[0]
    assert r.target == "llvm" and r.dtype == "float32" and r.attrs == {} and r.knobs
    assert r.mean_cost > 0 and r.error_msg == "" and r.gflops > 0


def test_load_model_file(tmp_path):
    b = loom.graph.Builder("one")
    x = b.input("x", [3])
    b.output(b.op("relu", x))
    g = b.build()
    g.save(str(tmp_path / "one.json"))
    assert loom.graph.load(str(tmp_path / "one.json")).num_ops == 1
    assert "Value(float32[3])" == repr(x)
    assert "Graph(one" in repr(g)
    outs = loom.graph.Builder().call
    assert callable(outs)
