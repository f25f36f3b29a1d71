#!/usr/bin/env python3
"""What calling a compiled kernel from Python costs over calling it from C++.

A tiny kernel (C[i] = A[i] + B[i] on 16 floats) is called `number` times in a Python loop with
NumPy arrays, and the same number of times by a C++ loop in this process
(loom._loom.bench_cpp_call: PackedFunc::call with the arrays' DLTensors, what a C++ caller
does). The best of `repeat` rounds of each is reported, and their difference: loom's goal is at
most 3 us per call. It also checks that no call copies an input or an output, at sizes from 16
to 16M elements: the kernel must see the arrays' own memory.

  PYTHONPATH=build/python build/venv/bin/python bench/python_overhead.py [--number N] [--repeat R]
"""
import argparse
import time

import numpy as np

import loom
from loom import _loom, te

GOAL_US = 3.0


def kernel(n):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return loom.build(loom.create_schedule(C), [A, B, C], name="add")["add"]


def measure(number=100000, repeat=5, n=16):
    f = kernel(n)
    a, b, c = (np.ones(n, "float32") for _ in range(3))
    py, cpp = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f(a, b, c)
        py.append((time.perf_counter() - t0) / number)
        cpp.append(_loom.bench_cpp_call(f, a, b, c, number))
    return {"python_us": min(py) * 1e6, "cpp_us": min(cpp) * 1e6, "overhead_us": (min(py) - min(cpp)) * 1e6}


def no_copy_at_any_size():
    """True when, at every size, the kernel wrote the caller's output array (never a copy) and
    read the inputs in place (an input changed between calls changes the result)."""
    for n in [16, 1 << 10, 1 << 16, 1 << 24]:
        f = kernel(n)
        a = np.zeros(n, "float32")
        b = np.ones(n, "float32")
        out_base = np.zeros(n + 16, "float32")
        c = out_base[16:]  # a view: only its own memory may change
        f(a, b, c)
        a[-1] = 41
        f(a, b, c)
        if not (c[0] == 1 and c[-1] == 42 and (out_base[:16] == 0).all()):
            return False
        for x in (a, b, c):  # the addresses a call hands the kernel
            if loom.runtime.data_pointer(x) != x.__array_interface__["data"][0]:
                return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--number", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    r = measure(args.number, args.repeat)
    print(f"tiny kernel (16 floats), best of {args.repeat} x {args.number} calls:")
    print(f"  from C++:    {r['cpp_us']:.3f} us per call")
    print(f"  from Python: {r['python_us']:.3f} us per call (NumPy arrays)")
    print(f"  overhead:    {r['overhead_us']:.3f} us per call (goal: <= {GOAL_US} us)")
    copies = no_copy_at_any_size()
    print(f"  no copy of inputs or outputs at 16 .. 16M elements: {'yes' if copies else 'NO'}")
    return 0 if r["overhead_us"] <= GOAL_US and copies else 1


if __name__ == "__main__":
    raise SystemExit(main())
