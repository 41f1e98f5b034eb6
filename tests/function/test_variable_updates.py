"""Variable updates in @function: ``assign_sub``/``assign_add`` of an elementwise value as one
fused region writing the variable's own buffer, fused regions over cache-sized blocks, and
buffer donation (traced equal to eager bit for bit, the variable keeping its array).
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.backend import cpu_threads
from eagerflow.function import optimizer_config, passes
from eagerflow.function.passes import fused_step

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _defaults():
    optimizer_config.reset()
    yield
    optimizer_config.reset()
    cpu_threads.set_threads(0)


def _adam_pair(shape, dtype=np.float32):
    """(traced step, eager step, [p, m, v] of each): Adam as the MLP benchmark writes it."""
    start = RNG.standard_normal(shape).astype(dtype)
    grads = [ef.constant(RNG.standard_normal(shape).astype(dtype)) for _ in range(3)]

    def make():
        p, m, v = (ef.Variable(start.copy()), ef.Variable(np.zeros(shape, dtype)),
                   ef.Variable(np.zeros(shape, dtype)))

        def step(g, lr_t):
            m.assign(0.9 * m + 0.1 * g)
            v.assign(0.999 * v + 0.001 * g * g)
            p.assign_sub(lr_t * m / (ef.sqrt(v) + 1e-7))
        return step, [p, m, v]

    traced, tvars = make()
    eager, evars = make()
    return ef.function(traced), eager, tvars, evars, grads


@pytest.mark.parametrize("shape", [(7,), (300, 1000), (784, 512), (3, 5, 40000)])
@pytest.mark.parametrize("threads", [1, 0])
def test_adam_updates_equal_eager_bits_and_keep_the_buffers(shape, threads):
    # (300, 1000) and larger run over cache blocks (and, with two threads, split); (7,) is
    # one call. Every variable keeps its array once the first step has run.
    cpu_threads.set_threads(threads)
    traced, eager, tvars, evars, grads = _adam_pair(shape)
    lr = ef.constant(np.float32(0.01))
    traced(grads[0], lr)
    eager(grads[0], lr)
    buffers = [id(v._value) for v in tvars]
    for g in grads[1:]:
        traced(g, lr)
        eager(g, lr)
    for t, e in zip(tvars, evars):
        np.testing.assert_array_equal(t.numpy(), e.numpy())
    assert [id(v._value) for v in tvars] == buffers


def test_assign_sub_of_an_elementwise_value_becomes_one_region():
    v = ef.Variable(np.ones((4, 3), np.float32))
    f = ef.function(lambda g: v.assign_sub(0.5 * ef.tanh(g), read_value=False))
    graph = passes.optimize(f.get_concrete_function(ef.TensorSpec([4, 3])).graph)
    ops = [n.op for n in graph.nodes]
    assert "AssignSubVariableOp" not in ops
    fused = next(n for n in graph.nodes if n.op == "FusedElementwise")
    assert fused.attrs["ops"][-1] == "Sub"
    source, _ = fused_step.python_source(fused_step.Program.of(fused), variable_donors=(2,))
    assert "_private_variable(a2)" in source  # the subtraction goes into v's buffer


@pytest.mark.parametrize("form", ["broadcast", "used_twice", "not_elementwise", "add"])
def test_assign_updates_that_keep_or_change_their_node(form):
    v = ef.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    x = ef.constant(RNG.standard_normal((4, 3)).astype(np.float32))
    row = ef.constant(RNG.standard_normal(3).astype(np.float32))

    def step(x, row):
        before = v.read_value() * 1.0
        if form == "broadcast":  # a row broadcast over v: the assignment keeps its node
            v.assign_sub(row * 2.0)
        elif form == "used_twice":  # the value is also returned
            u = x * 3.0
            v.assign_sub(u)
            return before, u, v.read_value()
        elif form == "not_elementwise":
            v.assign_sub(ef.matmul(x, ef.ones((3, 3))))
        else:
            v.assign_add(ef.exp(x) - 1.0)
        return before, v.read_value() * 1.0, v.read_value()

    traced = ef.function(step)
    expected = []
    start = v.numpy()
    for _ in range(2):
        expected.append([t.numpy() for t in step(x, row)])
    v.assign(start)
    for want in expected:
        got = [t.numpy() for t in traced(x, row)]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    graph = passes.optimize(traced.get_concrete_function(x, row).graph)
    ops = [n.op for n in graph.nodes]
    kept = {"broadcast": "AssignSubVariableOp", "used_twice": "AssignSubVariableOp",
            "not_elementwise": "AssignSubVariableOp", "add": None}[form]
    if kept:
        assert kept in ops
    else:
        assert "AssignAddVariableOp" not in ops and "AssignVariableOp" in ops


def test_blocked_region_with_broadcast_operands_equals_eager_bits():
    # A region over [600, 700] (above two cache blocks) reading a row, a column and a
    # scalar: blocks of rows give eager's bits, on one thread and on several.
    x = ef.constant(RNG.standard_normal((600, 700)).astype(np.float32))
    row = ef.constant(RNG.standard_normal(700).astype(np.float32))
    col = ef.constant(RNG.standard_normal((600, 1)).astype(np.float32))

    def f(x, row, col):
        return ef.tanh(x * row + col) * 0.5 - x

    traced = ef.function(f)
    graph = passes.optimize(traced.get_concrete_function(x, row, col).graph)
    assert [n.op for n in graph.nodes].count("FusedElementwise") == 1
    want = f(x, row, col).numpy()
    for threads in (1, 2):
        cpu_threads.set_threads(threads)
        np.testing.assert_array_equal(traced(x, row, col).numpy(), want)
