"""Tensor expressions, schedules and lower."""
import numpy as np
import pytest

import loom
from loom import te


def test_expression_operators():
    i = te.var("i")
    j = te.var("j")
    assert str(i + 1) == "(i + 1)"
    assert str(2 * i) == "(2*i)"
    assert "floordiv" in str(i // j) or "//" in str(i // j) or "/" in str(i // j)
    assert (i + 1).dtype == "int32"
    x = te.var("x", "float32")
    assert (x * 2.5).dtype == "float32"
    assert (x / 2.0).dtype == "float32"
    assert (i < j).dtype == "bool"
    assert (x.astype("float16")).dtype == "float16"
    assert te.const(3, "int64").value == 3
    assert te.const(1.5, "float32").value == 1.5
    assert (i + j).value is None
    for e in [i - 1, 1 - i, i % 3, 7 // i, -i, (i > 1) & (j <= 2), (i >= 1) | (j != 2), ~(i == j),
              te.if_then_else(i > j, i, j), te.max(i, j), te.min(i, j), te.floordiv(i, 2), te.floormod(i, 2),
              te.truncdiv(i, 2), te.truncmod(i, 2), te.exp(x), te.log(x), te.sqrt(x), te.tanh(x), te.sigmoid(x),
              te.abs(x), te.floor(x), te.ceil(x), te.round(x), te.erf(x), te.power(x, 2.0), te.cast("int32", x),
              te.max_value("float32"), te.min_value("int8")]:
        assert isinstance(e, te.Expr)
        assert str(e)


def test_expression_has_no_truth_value():
    i = te.var("i")
    with pytest.raises(loom.Error, match="no truth value"):
        if i < 3:
            pass


def test_bad_operand_raises():
    i = te.var("i")
    with pytest.raises(TypeError):
        i + "a"
    with pytest.raises(loom.Error, match="expected a loom expression"):
        te.placeholder((4,), name="A")[object()]


def test_placeholder_compute_and_tensor_properties():
    n = 16
    A = te.placeholder((n, 8), name="A")
    assert A.shape == (16, 8)
    assert A.dtype == "float32" and A.ndim == 2 and A.name == "A"
    B = te.compute((n, 8), lambda i, j: A[i, j] * 2 + 1, name="B")
    assert B.op.name == "B" and len(B.op.axis) == 2
    assert B.op.input_tensors == [A]
    assert B.op.axis[0].dom == (0, 16)
    assert hash(B) == hash(B.op.output(0))
    assert A(0, 1).dtype == "float32"
    k = te.reduce_axis((0, 8), "k")
    assert k.dom == (0, 8) and k.kind == "reduce"
    C = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="C")
    assert C.op.reduce_axis[0].same_as(k)
    M = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="M")
    m = te.compute((n,), lambda i: te.min(A[i, k], axis=[k]), name="m")
    assert M.op.tag == "" and m.shape == (16,)


def test_compute_errors_are_loom_errors():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(loom.Error, match="indices|index"):
        te.compute((4,), lambda i: A[i], name="bad")
    with pytest.raises(loom.Error):
        te.placeholder((4,), dtype="float33")
    with pytest.raises(loom.Error, match="te.max"):
        te.max(A[0, 0])
    with pytest.raises(loom.Error, match="range"):
        te.reduce_axis((0, 1, 2))


def test_exception_in_fcompute_propagates():
    def body(i):
        raise ValueError("from Python")
    with pytest.raises(ValueError, match="from Python"):
        te.compute((4,), body)


def test_multi_output_compute():
    A = te.placeholder((4,), name="A")
    outs = te.compute((4,), lambda i: (A[i] + 1, A[i] * 2), name="two")
    assert isinstance(outs, list) and len(outs) == 2
    assert outs[1].value_index == 1


def test_schedule_primitives_and_lower():
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)  # TVM's spelling; loom.create_schedule is the same
    assert isinstance(s, loom.Schedule)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    s[C].vectorize(yi)
    s[C].unroll(ki)
    f = s[C].fuse(xo, yo)
    s[C].parallel(f)
    ir = str(loom.lower(s, [A, B, C], name="mm"))
    assert "for (i.outer.j.outer.fused, 0, 64) parallel" in ir
    assert "ramp(" in ir and "k.inner" not in ir  # yi vectorized, ki unrolled
    assert [iv.name for iv in s[C].leaf_iter_vars][0] == f.name
    outer, inner = s[C].split(xi, nparts=2)
    assert outer.name and inner.name
    with pytest.raises(loom.Error, match="exactly one"):
        s[C].split(inner)


def test_compute_inline_compute_at_cache_rfactor():
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] + 1, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] * 2, name="C")
    s = loom.create_schedule(C)
    s[B].compute_inline()
    assert "B" not in [st.name for st in s.stages if "B[" in str(loom.lower(s, [A, C]))]
    s2 = loom.create_schedule(C)
    xo, xi = s2[C].split(C.op.axis[0], factor=4)
    s2[B].compute_at(s2[C], xo)
    ir = str(loom.lower(s2, [A, C]))
    assert "B" in ir
    s3 = loom.create_schedule(C)
    AA = s3.cache_read(A, "local", [B])
    CC = s3.cache_write(C, "local")
    assert AA.name != A.name and CC.name != C.name
    k = te.reduce_axis((0, n), "k")
    R = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="R")
    s4 = loom.create_schedule(R)
    ko, ki = s4[R].split(k, factor=8)
    RF = s4.rfactor(R, ki)
    assert RF.ndim == 2
    lo = loom.lower(s4, [A, R])
    assert lo.name == "default_function" and lo.args == ["A", "R"]


def test_lower_without_an_input_names_it():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    with pytest.raises(loom.Error, match="reads placeholder 'A', which is not among the arguments"):
        loom.lower(loom.create_schedule(B), [B])


def test_schedule_errors_are_loom_errors():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    Z = te.compute((8,), lambda i: A[i] * 3, name="Z")
    s = loom.create_schedule(B)
    with pytest.raises(loom.Error):
        s[Z]
    with pytest.raises(loom.Error):
        s[B].compute_inline()  # an output cannot be inlined
        loom.lower(s, [A, B])
    with pytest.raises(loom.Error, match="indexed by"):
        s["B"]


def test_bind_thread_axis_for_cuda_lowering():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i] * 2, name="B")
    s = loom.create_schedule(B)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    ir = str(loom.lower(s, [A, B], target="cuda"))
    assert "threadIdx.x" in ir


def test_tensorize_dot_u8s8s32():
    M, N, K = 4, 32, 16
    A = te.placeholder((M, K), "uint8", "A")
    W = te.placeholder((N // 16, K // 4, 16, 4), "int8", "W")  # B[n, k] packed [.., 16, 4]
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, N), lambda i, j: te.sum(
        A[i, k].astype("int32") * W[j // 16, k // 4, j % 16, k % 4].astype("int32"), axis=k), name="C")
    s = loom.create_schedule(C)
    no, ni = s[C].split(C.op.axis[1], factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(C.op.axis[0], no, ko, ni, ki)
    intrin = te.intrin.dot_u8s8s32(16)
    assert "dot_u8s8s32" in intrin.name and len(intrin.inputs) == 2
    s[C].tensorize(ni, intrin)
    assert "dot_u8s8s32" in str(loom.lower(s, [A, W, C]))
    f = loom.build(s, [A, W, C])
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 127, (N, K), dtype=np.int8)
    w = np.ascontiguousarray(b.reshape(N // 16, 16, K // 4, 4).transpose(0, 2, 1, 3))
    c = np.empty((M, N), np.int32)
    f(a, w, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T)


@pytest.mark.parametrize("n", [32, 37])  # 37: no factor below divides it
def test_scheduled_kernels_compute_what_numpy_does(n):
    """split/reorder/vectorize/unroll/parallel, compute_at, cache_read/cache_write and rfactor,
    each built and run, against NumPy (the C++ tests compare every primitive with te::evaluate)."""
    rng = np.random.default_rng(n)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = loom.create_schedule(C)
    CC = s.cache_write(C, "local")
    AA = s.cache_read(A, "local", [CC])
    xo, yo, xi, yi = s[C].tile(s[C].op.axis[0], s[C].op.axis[1], 8, 8)  # C's op after cache_write
    s[CC].compute_at(s[C], yo)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=5)
    s[AA].compute_at(s[CC], ko)
    s[CC].reorder(ko, ki, *s[CC].op.axis)
    s[CC].vectorize(s[CC].op.axis[1])
    s[CC].unroll(ki)
    s[C].parallel(xo)
    c = np.empty((n, n), "float32")
    loom.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)

    R = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="R")
    s = loom.create_schedule(R)
    ko, ki = s[R].split(R.op.reduce_axis[0], factor=4)
    RF = s.rfactor(R, ki)
    s[RF].compute_at(s[R], R.op.axis[0])
    r = np.empty(n, "float32")
    loom.build(s, [A, R])(a, r)
    np.testing.assert_array_equal(r, a.max(axis=1))

    D = te.compute((n,), lambda i: te.min(A[i, k] + B[k, i], axis=k), name="D")
    s = loom.create_schedule(D)
    o, i = s[D].split(D.op.axis[0], nparts=3)
    s[D].fuse(o, i)
    d = np.empty(n, "float32")
    loom.build(s, [A, B, D])(a, b, d)
    np.testing.assert_allclose(d, (a + b.T).min(axis=1), rtol=1e-6)
