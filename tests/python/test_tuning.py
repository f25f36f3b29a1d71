"""loom.tune, Ctrl-C, apply_history_best, build_best and the records tools."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import loom

FAST = dict(tuner="random", jobs=2, repeat=1, min_repeat_ms=1, confirm=0, quiet=True)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    log = tmp_path_factory.mktemp("tune") / "matmul.jsonl"
    result = loom.tune("matmul", [32, 32, 32], trials=6, log=log, **FAST)
    return log, result


def test_tune_writes_every_trial(tuned):
    log, result = tuned
    assert result.trials == 6 and result.errors == 0
    assert result.best is not None and result.best_gflops > 0
    records = loom.records.read_log(log)
    assert len(records) == 6
    r = records[0]
    assert r.key == "matmul(32,32,32;float32)" and r.op == "matmul" and r.shape == [32, 32, 32]
    assert r.valid and r.error == "no_error" and r.tuner == "random" and r.costs
    assert loom.records.Record.from_json(r.to_json()).config_index == r.config_index
    assert "GFLOP/s" in repr(r) and "TuneResult" in repr(result)


def test_tune_a_task_with_resume(tuned, tmp_path):
    task = loom.Task("matmul", [32, 32, 32])
    assert task.key == "matmul(32,32,32;float32)" and task.space_size > 6 and task.flop == 2 * 32 ** 3
    assert "tile" in task.space and task.config(task.default_index)
    s, args = task.instantiate()
    assert len(args) == 3 and "for" in str(loom.lower(s, args))
    log = tmp_path / "resumed.jsonl"
    log.write_text(tuned[0].read_text())  # the shared log stays as tuned
    again = loom.tune(task, trials=2, log=log, resume=True, **FAST)
    assert again.resumed == 6 and again.trials == 2
    assert "matmul" in loom.template_names()


def test_apply_history_best_and_build_best(tuned):
    log, result = tuned
    task = loom.Task("matmul", [32, 32, 32])
    best = loom.apply_history_best(log)
    assert len(best) == 1
    assert best.query(task).config_index == result.best.config_index
    assert best.records()[0].key == task.key
    with best:
        m = loom.build_best(task)
    a = np.random.rand(32, 32).astype("float32")
    b = np.random.rand(32, 32).astype("float32")
    c = np.empty((32, 32), "float32")
    m(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    untuned = loom.build_best(loom.Task("matmul", [16, 16, 16]))  # the default config, with a warning
    assert untuned.function_names == ["matmul"]


def test_records_tools(tuned, tmp_path):
    log, _ = tuned
    rows = loom.records.summary(log)
    assert rows[0]["key"] == "matmul(32,32,32;float32)" and rows[0]["trials"] >= 6
    assert "best GFLOP/s" in loom.records.format_summary([log])
    merged = tmp_path / "merged.jsonl"
    stats = loom.records.merge([log, log], merged)
    assert stats["read"] == 2 * stats["written"]
    assert loom.records.distill(log, tmp_path / "best.jsonl") == 1
    curve = loom.records.best_curve(log)
    assert len(curve) >= 6 and curve == sorted(curve)


def test_tuning_errors_are_loom_errors(tmp_path):
    with pytest.raises(loom.Error, match="no_such_op|templates"):
        loom.Task("no_such_op", [1])
    with pytest.raises(loom.Error):
        loom.Task("matmul", [32, 32])  # matmul takes M,N,K
    with pytest.raises(loom.Error, match="expected a loom.Task, an operator name"):
        loom.tune(3, log=tmp_path / "x.jsonl")
    with pytest.raises(loom.Error, match="needs shape"):
        loom.tune("matmul", log=tmp_path / "x.jsonl")
    with pytest.raises(loom.Error, match="tuner"):
        loom.tune("matmul", [8, 8, 8], trials=1, log=tmp_path / "x.jsonl", tuner="nope")
    with pytest.raises(loom.Error, match="trials"):
        loom.tune("matmul", [8, 8, 8], trials=0, log=tmp_path / "x.jsonl")
    with pytest.raises(loom.Error):
        loom.records.read_log(tmp_path / "missing.jsonl")
    with pytest.raises(loom.Error):
        loom.records.Record.from_json("{not json")



def group_norm(n=2, c=8, hw=10, groups=4, eps=1e-5):
    """A user's operator with no template: group normalization over [n, c, hw]."""
    te = loom.te
    x = te.placeholder((n, c, hw), name="x")
    per = c // groups
    r1, r2 = te.reduce_axis((0, per), "r1"), te.reduce_axis((0, hw), "r2")
    inv = 1.0 / (per * hw)
    mean = te.compute((n, groups), lambda b, g: te.sum(x[b, g * per + r1, r2] * inv, axis=[r1, r2]), name="mean")
    s1, s2 = te.reduce_axis((0, per), "s1"), te.reduce_axis((0, hw), "s2")
    var = te.compute((n, groups), lambda b, g: te.sum((x[b, g * per + s1, s2] - mean[b, g]) *
                                                      (x[b, g * per + s1, s2] - mean[b, g]) * inv, axis=[s1, s2]),
                     name="var")
    y = te.compute((n, c, hw), lambda b, ch, i: (x[b, ch, i] - mean[b, ch // per]) /
                   te.sqrt(var[b, ch // per] + eps), name="y")
    return [x, y]


def group_norm_ref(a, groups=4, eps=1e-5):
    g = a.reshape(a.shape[0], groups, -1)
    return ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(a.shape)


def test_auto_schedule_any_te_computation(tmp_path):
    args = group_norm()
    task = loom.Task.from_tensors(args, "my_group_norm")
    assert task.is_auto and task.op == "auto:my_group_norm" and task.space_size > 1
    log = tmp_path / "gn.jsonl"
    result = loom.tune(task, trials=4, log=log, **FAST)
    assert result.trials == 4 and result.best is not None
    recs = loom.records.read_log(log)
    assert all(r.steps.startswith("[") for r in recs if r.valid)  # auto records carry their steps
    # The same computation rebuilt (fresh tensors) finds the record, through a list of tensors too.
    again = loom.tune(group_norm(), name="my_group_norm", trials=1, log=log, resume=True, **FAST)
    assert again.resumed == 4
    rebuilt = loom.Task.from_tensors(group_norm(), "my_group_norm")
    assert rebuilt.key == task.key
    with loom.apply_history_best(log) as best:
        assert best.query(rebuilt) is not None
        m = loom.build_best(rebuilt)
    a = np.random.rand(2, 8, 10).astype("float32")
    out = np.empty_like(a)
    m(a, out)
    np.testing.assert_allclose(out, group_norm_ref(a), rtol=1e-4, atol=1e-4)
    s, targs = rebuilt.instantiate(result.best.config_index)
    assert "for" in str(loom.lower(s, targs))


def test_auto_schedule_a_registry_operator(tmp_path):
    task = loom.Task.from_operator("layer_norm", [[16, 64], [64], [64]])
    assert task.is_auto and task.op.startswith("auto:layer_norm")
    log = tmp_path / "ln.jsonl"
    r = loom.tune("layer_norm", inputs=[[16, 64], [64], [64]], trials=3, log=log, **FAST)
    assert r.trials == 3 and r.errors == 0
    typed = loom.Task.from_operator("matmul", ["float32[8,16]", "float32[16,4]"])  # has a template too
    assert typed.is_auto and not loom.Task("matmul", [8, 4, 16]).is_auto


def test_auto_task_errors_are_loom_errors(tmp_path):
    with pytest.raises(loom.Error, match="empty"):
        loom.Task.from_tensors([], "nothing")
    with pytest.raises(loom.Error, match="no_such_op|unknown"):
        loom.Task.from_operator("no_such_op", [[4]])
    with pytest.raises(loom.Error, match="shape|type"):
        loom.Task.from_operator("layer_norm", [3.5])
    with pytest.raises(loom.Error):
        loom.Task.from_operator("layer_norm", [[16, 64]])  # too few inputs
    with pytest.raises(loom.Error, match="not both"):
        loom.tune("layer_norm", [1], inputs=[[4]], log=tmp_path / "x.jsonl")
    with pytest.raises(loom.Error, match="te computation"):
        loom.tune([1, 2], log=tmp_path / "x.jsonl")

CTRL_C = """
import sys, loom
loom.tune("matmul", [64, 64, 64], trials=100000, log=sys.argv[1], tuner="random", jobs=1, batch=1,
          repeat=1, min_repeat_ms=1, confirm=0)
"""


def test_ctrl_c_stops_tuning_with_the_log_intact(tmp_path):
    log = tmp_path / "interrupted.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, str(log)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and (not log.exists() or log.read_text().count("\n") < 3):
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode != 0
    assert "KeyboardInterrupt" in err and "interrupted after" in err
    lines = log.read_text().splitlines()
    assert 3 <= len(lines) < 100000
    for line in lines:  # every line a whole record
        loom.records.Record.from_json(line)


def test_tune_and_build_release_the_gil(tmp_path):
    import threading
    done = threading.Event()
    ticks = []

    def work():
        loom.tune("matmul", [32, 32, 32], trials=2, log=tmp_path / "gil.jsonl", **FAST)
        loom.build_best(loom.Task("matmul", [48, 48, 48]))
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks.append(1)
        done.wait(0.001)
    t.join()
    assert len(ticks) > 20  # the main thread kept running meanwhile
