"""build, calling compiled functions on NumPy / DLPack arrays without copying, export_library,
load_module and loom.nd."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import loom
from loom import te


def vector_add(n=1024, dtype="float32"):
    A = te.placeholder((n,), dtype, "A")
    B = te.placeholder((n,), dtype, "B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return A, B, C


@pytest.fixture(scope="module")
def vadd():
    A, B, C = vector_add()
    s = loom.create_schedule(C)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(xi)
    return loom.build(s, [A, B, C], "llvm", name="vadd")


def test_build_and_call_with_numpy(vadd):
    a = np.random.rand(1024).astype("float32")
    b = np.random.rand(1024).astype("float32")
    c = np.zeros(1024, "float32")
    vadd(a, b, c)
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    vadd["vadd"](a, b, c)
    assert vadd.function_names == ["vadd"] and vadd.entry_name == "vadd"
    f = vadd.get_function("vadd")
    assert f.name == "vadd"
    assert "vadd" in vadd.info_json
    assert "define" in vadd.get_source("ll")


def test_no_copy_the_function_sees_the_callers_memory(vadd):
    """The output is written into the caller's array, and the data pointer the function
    receives is the array's (checked with a view at an offset, which a copy would lose)."""
    big = np.zeros(2048, "float32")
    out = big[512:1536]  # a view: its memory lies inside big's
    a = np.ones(1024, "float32")
    b = np.full(1024, 2.0, "float32")
    # data_pointer converts an argument exactly as a call does: the kernel gets these addresses
    for arr in (a, b, out):
        assert loom.runtime.data_pointer(arr) == arr.__array_interface__["data"][0]
    assert loom.runtime.data_pointer(OnlyDLPack(out)) == out.__array_interface__["data"][0]
    vadd(a, b, out)
    assert (big[512:1536] == 3.0).all() and (big[:512] == 0).all() and (big[1536:] == 0).all()
    # a large one too: no copy at any size
    n = 1 << 22
    A, B, C = vector_add(n)
    s = loom.create_schedule(C)
    f = loom.build(s, [A, B, C])
    x = np.ones(n, "float32")
    y = np.ones(n, "float32")
    z = np.empty(n, "float32")
    f(x, y, z)
    assert z[0] == 2 and z[-1] == 2


def test_dlpack_objects_and_nd_arrays(vadd):
    a = loom.nd.array(np.arange(1024, dtype="float32"))
    b = loom.nd.empty((1024,), "float32")
    b.copyfrom(np.ones(1024, "float32"))
    c = loom.nd.empty((1024,))
    assert c.shape == (1024,) and c.dtype == "float32"
    vadd(a, b, c)
    np.testing.assert_array_equal(c.numpy(), np.arange(1024) + 1)
    # NumPy sees loom's memory (from_dlpack) and loom sees NumPy's (nd.from_dlpack): no copies
    view = np.from_dlpack(c)
    assert view.__array_interface__["data"][0] == c.data_pointer
    src = np.arange(6, dtype="float32").reshape(2, 3)
    imported = loom.nd.from_dlpack(src)
    assert imported.data_pointer == src.__array_interface__["data"][0]
    src[0, 0] = 42
    assert imported.numpy()[0, 0] == 42
    assert a.data_pointer % 64 == 0
    writable = c.numpy()  # a view of loom's memory NumPy may write (on every NumPy 2)
    writable[0] = -1
    assert c.numpy()[0] == -1 and writable.__array_interface__["data"][0] == c.data_pointer
    assert "NDArray" in repr(a)


class OnlyDLPack:
    """An array known only by its __dlpack__ (as other frameworks' tensors are)."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, **kw):
        return self.arr.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def test_any_dlpack_object(vadd):
    a = np.ones(1024, "float32")
    c = np.zeros(1024, "float32")
    vadd(OnlyDLPack(a), OnlyDLPack(a), OnlyDLPack(c))
    assert (c == 2).all()


def test_call_errors_are_loom_errors(vadd):
    a = np.ones(1024, "float32")
    with pytest.raises(loom.Error, match="argument 1 is a str"):
        vadd(a, "x", a)
    with pytest.raises(loom.Error):
        vadd(a, a)  # too few arguments
    with pytest.raises(loom.Error):
        vadd(a, a, np.ones(1023, "float32"))  # wrong shape
    with pytest.raises(loom.Error):
        vadd(a, a, np.ones(1024, "float64"))  # wrong dtype
    with pytest.raises(loom.Error, match="dtype >f4, which loom does not take"):
        vadd(a, np.ones(1024, ">f4"), a)  # byte-swapped
    with pytest.raises(loom.Error, match="not a dense row-major array"):
        vadd(a, np.ones(2048, "float32")[::2], a)
    with pytest.raises(loom.Error, match="available|no function"):
        vadd["nope"]
    with pytest.raises(loom.Error):
        loom.build(loom.create_schedule(vector_add()[2]), [], "llvm")
    with pytest.raises(loom.Error):
        loom.build(loom.create_schedule(vector_add()[2]), list(vector_add()), "no-such-target")


def test_export_library_and_load_module(vadd, tmp_path):
    path = str(tmp_path / "vadd.so")
    vadd.export_library(path)
    assert os.path.exists(path)
    m = loom.runtime.load_module(path)
    assert "vadd" in m.function_names
    a = np.arange(1024, dtype="float32")
    c = np.empty(1024, "float32")
    m["vadd"](a, a, c)
    np.testing.assert_array_equal(c, 2 * a)
    with pytest.raises(loom.Error):
        loom.runtime.load_module(str(tmp_path / "missing.so"))
    m.export_object(str(tmp_path / "vadd.o")) if m.type_key != "dso" else None


def test_calls_release_the_gil():
    """A long kernel running in one thread leaves the interpreter to the others."""
    n = 1 << 24
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, 64), "k")
    B = te.compute((n,), lambda i: te.sum(A[i] * k.astype("float32"), axis=k), name="B")
    f = loom.build(loom.create_schedule(B), [A, B])
    a = np.ones(n, "float32")
    b = np.empty(n, "float32")
    ticks = []
    done = threading.Event()

    def run():
        f(a, b)
        done.set()

    t = threading.Thread(target=run)
    t.start()
    while not done.is_set():
        ticks.append(1)
        done.wait(0.001)
    t.join()
    assert b[0] == sum(range(64))
    assert len(ticks) > 1


def test_bool_and_float16_arrays():
    A = te.placeholder((8,), "bool", "A")
    B = te.compute((8,), lambda i: ~A[i], name="B")
    f = loom.build(loom.create_schedule(B), [A, B])
    a = np.array([1, 0, 1, 0, 1, 0, 1, 1], bool)
    b = np.zeros(8, bool)
    f(a, b)
    np.testing.assert_array_equal(b, ~a)
    H = te.placeholder((4,), "float16", "H")
    G = te.compute((4,), lambda i: H[i] * 2.0, name="G")
    g = loom.build(loom.create_schedule(G), [H, G])
    o = np.zeros(4, np.float16)
    g(np.full(4, 1.5, np.float16), o)
    assert (o == 3).all()


def test_export_to_a_missing_folder_is_an_error(tmp_path):
    A, B, C = vector_add(16)
    m = loom.build(loom.create_schedule(C), [A, B, C], name="f")
    with pytest.raises(loom.Error):
        m.export_library(str(tmp_path / "no_dir" / "x.so"))
