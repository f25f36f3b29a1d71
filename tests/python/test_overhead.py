"""bench/python_overhead.py as a test: a tiny kernel called from Python with NumPy arrays costs at
most 3 us more than the same call from C++, and no call copies its arrays at any size."""
import importlib.util
import os

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "python_overhead.py")


def load_bench():
    spec = importlib.util.spec_from_file_location("python_overhead", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_call_overhead_within_goal():
    bench = load_bench()
    # Best of three measurements: a busy machine slows single rounds, never speeds them up.
    results = [bench.measure(number=20000, repeat=3) for _ in range(3)]
    best = min(r["overhead_us"] for r in results)
    assert best <= bench.GOAL_US, results


def test_no_copy_at_any_size():
    assert load_bench().no_copy_at_any_size()
