"""Writing and scheduling an operator: TVM's tensor-expression tutorial, the loom way.

A vector add first (declare, schedule, build, check against NumPy), then a matmul made fast one
schedule step at a time (blocking, vectorizing, loop order, packing, parallel loops), each step
printed as loop IR on request and timed against NumPy.

  PYTHONPATH=build/python build/venv/bin/python examples/python/tensor_expression.py [--size N] [--print-ir]
"""
import argparse
import time

import numpy as np

import loom
from loom import te


def timed(f, *args, number=5):
    f(*args)
    t0 = time.perf_counter()
    for _ in range(number):
        f(*args)
    return (time.perf_counter() - t0) / number


def vector_add(n):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = loom.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=64)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    fadd = loom.build(s, [A, B, C], "llvm", name="myadd")
    a = np.random.uniform(size=n).astype(A.dtype)
    b = np.random.uniform(size=n).astype(B.dtype)
    c = np.zeros(n, dtype=C.dtype)
    fadd(a, b, c)
    np.testing.assert_allclose(c, a + b)
    print(f"vector add of {n}: correct, {timed(fadd, a, b, c) * 1e6:.1f} us (NumPy {timed(np.add, a, b, c) * 1e6:.1f} us)")


def matmul_steps(n, bn=32, print_ir=False):
    k = te.reduce_axis((0, n), "k")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    c = np.zeros((n, n), "float32")
    expect = a @ b
    print(f"matmul {n}x{n}x{n}: NumPy {timed(np.matmul, a, b, c) * 1e3:.3f} ms")

    def report(name, s, args):
        f = loom.build(s, args, "llvm", name="mm")
        c[:] = 0
        f(a, b, c)
        np.testing.assert_allclose(c, expect, rtol=1e-3)
        print(f"  {name:10} {timed(f, a, b, c) * 1e3:8.3f} ms")
        if print_ir:
            print(loom.lower(s, args, name="mm"))

    s = loom.create_schedule(C.op)
    report("default", s, [A, B, C])

    # Blocking: 32x32 tiles of C, the reduction split by 4.
    s = loom.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    report("blocking", s, [A, B, C])

    # Vectorizing the innermost loop.
    s[C].vectorize(yi)
    report("vectorize", s, [A, B, C])

    # Loop permutation: xi before ki, so B's rows stream through the cache.
    s = loom.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    report("permute", s, [A, B, C])

    # Parallel outer loop.
    s[C].parallel(xo)
    report("parallel", s, [A, B, C])

    # A local accumulator per tile (cache_write), computed inside the tile loop.
    s = loom.create_schedule(C.op)
    CC = s.cache_write(C, "local")  # C's stage now copies out of CC: its axes are s[C].op's
    xo, yo, xi, yi = s[C].tile(s[C].op.axis[0], s[C].op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kc, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].parallel(xo)
    report("cache", s, [A, B, C])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--print-ir", action="store_true")
    args = ap.parse_args()
    vector_add(args.size * 16)
    matmul_steps(args.size, print_ir=args.print_ir)


if __name__ == "__main__":
    main()
