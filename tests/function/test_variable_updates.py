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


# -- fused regions compiled into one loop (backend.cpu_jit) ----------------------------------

def _bits(a):
    # Every bit but a NaN's sign and payload (which the order of a commuted operand may
    # pick, here and between numpy's own vector and scalar loops).
    a = np.where(np.isnan(a), np.nan, a).astype(np.asarray(a).dtype)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _keras_adam_pair(shape, dtype):
    """Adam as Keras writes it (``m.assign_add((g - m) * c)`` reads ``m`` twice, so one
    array arrives as two inputs of the region), with a gradient holding zeros, signed
    zeros, infinities and NaNs; returns (make, grads)."""
    start = RNG.standard_normal(shape).astype(dtype)
    grads = []
    for k in range(3):
        g = RNG.standard_normal(shape).astype(dtype)
        flat = g.reshape(-1)
        flat[k:k + 40:4] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-38, 3e38, 0.0, -0.0]
        grads.append(ef.constant(g))

    def make():
        p, m, v = (ef.Variable(start.copy()), ef.Variable(np.zeros(shape, dtype)),
                   ef.Variable(np.zeros(shape, dtype)))

        def step(g, alpha):
            m.assign_add((g - m) * (1.0 - 0.9))
            v.assign_add((ef.square(g) - v) * (1.0 - 0.999))
            p.assign_sub((m * alpha) / (ef.sqrt(v) + 1e-7))
            w = -(p * 0.5) / (g + 2.0)   # a region writing a fresh array
            return w
        return step, [p, m, v]

    return make, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 0])
def test_compiled_loops_give_the_numpy_regions_bits(dtype, threads, monkeypatch):
    # The same step traced with the compiled loops and with them off, and run eagerly:
    # every variable and the returned value are the same bits (signed zeros included).
    from eagerflow.backend import cpu_jit

    pytest.importorskip("numba")
    cpu_threads.set_threads(threads)
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 1 << 10)
    monkeypatch.setattr(cpu_threads, "FUSED_MIN_ELEMENTS", 1 << 12)  # loops split too
    make, grads = _keras_adam_pair((300, 257), dtype)
    alpha = ef.constant(dtype(0.01))
    ran = []
    run = fused_step._Loop.run
    monkeypatch.setattr(fused_step._Loop, "run",
                        lambda self, *a: ran.append(run(self, *a)) or ran[-1])
    runs = []
    for form in ("jit", "numpy", "eager"):
        step, variables = make()
        fn = step if form == "eager" else ef.function(step)
        try:
            cpu_jit.set_enabled(form != "numpy")
            outs = [fn(g, alpha).numpy() for g in grads]
        finally:
            cpu_jit.set_enabled(True)
        runs.append([_bits(v.numpy()) for v in variables] + [_bits(o) for o in outs])
    # Every step ran its loops: the merged update (update_loops) and the fresh region.
    assert ran.count(True) == 2 * len(grads)
    for got in runs[:2]:
        for a, b in zip(got, runs[2]):
            np.testing.assert_array_equal(a, b)


def test_which_regions_compile_to_one_loop():
    pytest.importorskip("numba")
    x = ef.constant(RNG.standard_normal((200, 100)).astype(np.float32))
    row = ef.constant(RNG.standard_normal(100).astype(np.float32))
    c = ef.constant(np.float32(3.0))

    def loops(f, *args):
        graph = passes.optimize(ef.function(f).get_concrete_function(*args).graph)
        nodes = [n for n in graph.nodes if n.op == "FusedElementwise"]
        assert len(nodes) == 1
        return fused_step._Loop.of(fused_step.Program.of(nodes[0]), nodes[0])

    assert loops(lambda x, c: ef.sqrt(x * x + c) / (x - c), x, c) is not None
    assert loops(lambda x, c: ef.tanh(x * c) + x, x, c) is None  # tanh: not one IEEE op
    assert loops(lambda x, r: (x + r) * 2.0, x, row) is not None  # a row, as a bias
    assert loops(lambda x, r: ef.nn.relu(ef.maximum(x, r) - c), x, row) is not None
    column = ef.constant(RNG.standard_normal((200, 1)).astype(np.float32))
    assert loops(lambda x, k: (x + k) * 2.0, x, column) is None  # broadcast over a last axis
    assert loops(lambda k, r: (k + r) * 2.0, column, row) is None  # no full-shape input
    assert loops(lambda x: ef.cast(x * 2.0, ef.float64) + 1.0, x) is None  # two dtypes


def test_a_scalar_head_runs_before_the_loop():
    # Sub-ops of scalars only (a bias correction from an integer step count: a cast and
    # powers, which have no loop form) run first; the loop computes the rest.
    pytest.importorskip("numba")
    x = ef.constant(RNG.standard_normal((200, 100)).astype(np.float32))
    t = ef.constant(np.int64(3))

    def f(x, t):
        step = ef.cast(t + 1, ef.float32)
        alpha = 0.5 * ef.sqrt(1.0 - ef.pow(0.999, step)) / (1.0 - ef.pow(0.9, step))
        return x - (x * alpha) / (ef.sqrt(x * x) + 1e-7)

    graph = passes.optimize(ef.function(f).get_concrete_function(x, t).graph)
    node = next(n for n in graph.nodes if n.op == "FusedElementwise")
    program = fused_step.Program.of(node)
    loop = fused_step._Loop.of(program, node)
    assert loop is not None
    names = [p.name for p in program.prims]
    assert {"Cast", "Pow"} <= set(names)
    # The loop's own sub-ops are the exact ones over [200, 100]: mul, mul, sqrt, add, div, sub.
    assert [p.name for p in loop.program.prims] == ["Mul", "Mul", "Sqrt", "AddV2", "RealDiv",
                                                     "Sub"]
    assert len(loop.head) == len(names) - 6
    assert fused_step.SCALAR in loop.full and fused_step.FULL in loop.full
    assert loop.program.outputs == (5,)
    got = ef.function(f)(x, t).numpy()
    np.testing.assert_array_equal(_bits(got), _bits(f(x, t).numpy()))


@pytest.mark.parametrize("threads", [1, 0])
def test_keras_adam_updates_run_as_one_loop_with_the_numpy_bits(threads, monkeypatch):
    # Keras' Adam computes its bias correction from the step count inside the parameter's
    # region: with the scalar head that region compiles, merges with the moments' regions
    # (one node, three results) and gives the numpy form's and eager's bits.
    from eagerflow.backend import cpu_jit

    pytest.importorskip("numba")
    cpu_threads.set_threads(threads)
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 1 << 10)
    monkeypatch.setattr(cpu_threads, "FUSED_MIN_ELEMENTS", 1 << 12)  # loops split too
    shape = (300, 257)
    start = RNG.standard_normal(shape).astype(np.float32)
    grads = []
    for k in range(3):
        g = RNG.standard_normal(shape).astype(np.float32)
        g.reshape(-1)[k:k + 24:4] = [0.0, -0.0, np.inf, np.nan, 1e-30, 3e38]
        grads.append(ef.constant(g))

    def make():
        var = ef.Variable(start.copy())
        opt = ef.keras.optimizers.Adam(learning_rate=0.01)

        def step(g):
            opt.apply_gradients([(g, var)])
            return var.read_value()
        return step, opt, var

    ran = []
    run = fused_step._Loop.run
    monkeypatch.setattr(fused_step._Loop, "run",
                        lambda self, *a: ran.append(run(self, *a)) or ran[-1])
    results = []
    for form in ("jit", "numpy", "eager"):
        step, opt, var = make()
        fn = step if form == "eager" else ef.function(step)
        try:
            cpu_jit.set_enabled(form != "numpy")
            if form == "jit":
                graph = passes.optimize(fn.get_concrete_function(grads[0]).graph)
                assert [n.num_outputs for n in _merged(graph)] == [3]
            for g in grads:
                fn(g)
        finally:
            cpu_jit.set_enabled(True)
        slots = [opt.get_slot(var, name).numpy() for name in ("momentum", "velocity")]
        results.append([_bits(var.numpy())] + [_bits(a) for a in slots])
    assert ran.count(True) == len(grads)  # every traced step ran the merged loop
    for got in results[:2]:
        for a, b in zip(got, results[2]):
            np.testing.assert_array_equal(a, b)


def test_a_loop_writing_its_input_reads_and_writes_one_slice():
    # Two slices of one array would fail the compiled overlap check (scalar code).
    node_program = fused_step.Program(("Mul", "Sub"), (2, 2), (0, 1, 2, 3), ("float32",) * 2,
                                      ("", ""), (-1, -1), ("float32",) * 3)
    source = fused_step.loop_source(node_program, (True, False, True), (0, 1, 2), (2,))
    assert "c0 = b2" in source and "out" not in source.split(":")[0]
    fresh = fused_step.loop_source(node_program, (True, False, True), (0, 1, 0), (None,))
    assert "a2" not in fresh.split(":")[0] and "c0 = out0[lo:hi]" in fresh


def test_the_rows_of_a_loop_over_a_broadcast_row():
    # A bias over the last axis: the rows are the trailing axes from 256 elements on, the
    # row slice is taken once, and the text holds no name from the graph.
    assert fused_step._row_axis((32,), (64, 13, 13, 32)) == 3
    assert fused_step._row_axis((1, 13, 32), (64, 13, 13, 32)) == 2
    assert fused_step._row_axis((13, 1), (64, 13, 13, 1)) == 2
    assert fused_step._row_axis((13, 1), (64, 13, 13, 32)) is None
    assert fused_step._row_axis((1, 1), (64, 32)) is None
    node_program = fused_step.Program(("AddV2", "Relu"), (2, 1), (0, 1, 2),
                                      ("float32",) * 2, ("", ""), (-1, -1), ("float32",) * 2)
    source = fused_step.loop_source(node_program, (fused_step.FULL, fused_step.ROW), (0, 1),
                                    (0,))
    lines = source.splitlines()
    assert lines[0] == "def fused_loop(lo, hi, n, a0, a1):"
    assert lines[1:4] == ["    b1 = a1[0:n]", "    for k in range(lo, hi):",
                          "        b0 = a0[k * n:k * n + n]"]
    assert "        c0 = b0" in lines and "np.float32(0)" in source


def _special(shape, dtype, rng):
    # Values that meet each other as ties (both zeros among them), NaNs and infinities.
    values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf], dtype)
    return values[rng.integers(0, len(values), shape)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 0])
def test_loops_over_rows_with_relu_maximum_minimum_give_numpy_bits(dtype, threads,
                                                                   monkeypatch):
    # Regions with a bias row and relu/maximum/minimum, traced with the loops, traced with
    # them off, and eager: the same bits, ties of -0.0 and 0.0 included (numpy's maximum
    # and minimum return their second operand on a tie, relu_numpy gives 0.0 for -0.0).
    from eagerflow.backend import cpu_jit

    pytest.importorskip("numba")
    cpu_threads.set_threads(threads)
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 1 << 10)
    monkeypatch.setattr(cpu_threads, "FUSED_MIN_ELEMENTS", 1 << 12)  # loops split too
    rng = np.random.default_rng(11)
    shape = (12, 5, 7, 16)
    x = ef.constant(_special(shape, dtype, rng))
    y = ef.constant(_special(shape, dtype, rng))
    row = ef.constant(_special((16,), dtype, rng))
    plane = ef.constant(_special((1, 7, 16), dtype, rng))
    c = ef.constant(dtype(-0.0))
    regions = [lambda x, y, r, p, c: ef.nn.relu(x + r),
               lambda x, y, r, p, c: ef.nn.relu(x * c),  # relu(-0.0) and relu(nan)
               lambda x, y, r, p, c: ef.maximum(x, r) * 2.0,
               lambda x, y, r, p, c: ef.maximum(r, x) * 2.0,
               lambda x, y, r, p, c: ef.minimum(x, p) - c,
               lambda x, y, r, p, c: ef.minimum(p, ef.maximum(y, x)) + y,
               lambda x, y, r, p, c: ef.maximum(x * c, c) / r,
               lambda x, y, r, p, c: ef.minimum(c, -y) + x]
    ran = []
    run = fused_step._Loop.run
    monkeypatch.setattr(fused_step._Loop, "run",
                        lambda self, *a: ran.append(run(self, *a)) or ran[-1])
    for region in regions:
        args = (x, y, row, plane, c)
        want = _bits(region(*args).numpy())
        for jit in (True, False):
            try:
                cpu_jit.set_enabled(jit)
                got = ef.function(region)(*args).numpy()
            finally:
                cpu_jit.set_enabled(True)
            np.testing.assert_array_equal(_bits(got), want)
    assert ran == [True] * len(regions)  # every region ran as one loop with the loops on
    # The special values met: ties of the two zeros, NaNs and infinities on both sides.
    xs, rs = x.numpy(), np.broadcast_to(row.numpy(), shape)
    assert ((xs == 0) & (rs == 0) & (np.signbit(xs) != np.signbit(rs))).any()
    assert (np.isnan(xs) & ~np.isnan(rs)).any() and (~np.isnan(xs) & np.isnan(rs)).any()
    assert np.isinf(xs).any() and np.isinf(rs).any()


def test_a_conv_pool_bias_relu_model_traced_equals_eager(monkeypatch):
    # The CNN's region relu(max_pool(conv) + b), forward and gradients: traced with the
    # loops the same bits as eager.
    from eagerflow.backend import cpu_jit

    pytest.importorskip("numba")
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 1 << 10)
    rng = np.random.default_rng(3)
    x = ef.constant(rng.standard_normal((8, 14, 14, 1)).astype(np.float32))
    w = ef.Variable(rng.standard_normal((3, 3, 1, 16)).astype(np.float32))
    b = ef.Variable(rng.standard_normal(16).astype(np.float32))

    def model(x):
        with ef.GradientTape() as tape:
            h = ef.nn.max_pool2d(ef.nn.conv2d(x, w, 1, "VALID"), 2, 2, "VALID")
            h = ef.nn.relu(h + b)
            loss = ef.reduce_sum(h * h)
        return [h] + tape.gradient(loss, [w, b])

    ran = []
    run = fused_step._Loop.run
    monkeypatch.setattr(fused_step._Loop, "run",
                        lambda self, *a: ran.append(run(self, *a)) or ran[-1])
    traced = [t.numpy() for t in ef.function(model)(x)]
    assert True in ran  # the bias-relu region ran as one loop
    for got, want in zip(traced, [t.numpy() for t in model(x)]):
        np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("jit", [True, False])
def test_keras_adam_reads_each_slot_once_and_keeps_its_buffers(jit):
    # ``m.assign_add((g - m) * c)`` reads m twice; the update's read merges with the first
    # (cse after assign_update), so the region reads m once and writes into its buffer.
    from eagerflow.backend import cpu_jit

    make, grads = _keras_adam_pair((300, 257), np.float32)
    step, variables = make()
    traced = ef.function(step)
    alpha = ef.constant(np.float32(0.01))
    graph = passes.optimize(traced.get_concrete_function(grads[0], alpha).graph)
    for node in graph.nodes:
        if node.op == "FusedElementwise":
            reads = [src.attrs["variable"] for src, _ in node.inputs
                     if src.op == "ReadVariableOp"]
            assert len(reads) == len(set(reads))
    try:
        cpu_jit.set_enabled(jit)
        traced(grads[0], alpha)
        buffers = [id(v._value) for v in variables]
        for g in grads[1:]:
            traced(g, alpha)
    finally:
        cpu_jit.set_enabled(True)
    assert [id(v._value) for v in variables] == buffers


def test_a_read_only_operand_takes_the_numpy_form():
    # The loops are compiled for writable arrays; a read-only buffer (wrapped as is) and a
    # read-only scalar still compute, through the numpy form and a copy respectively.
    from eagerflow.backend import cpu_jit
    from eagerflow.framework import context
    from eagerflow.tensor import wrap

    pytest.importorskip("numba")
    frozen = RNG.standard_normal((300, 257)).astype(np.float32)
    frozen.flags.writeable = False
    scalar = np.array(3.0, np.float32)
    scalar.flags.writeable = False
    f = ef.function(lambda x, s: ef.sqrt(x * x + s) - x)
    x, s = wrap(frozen, context.CPU0), wrap(scalar, context.CPU0)
    want = np.sqrt(frozen * frozen + scalar) - frozen
    assert cpu_jit.wanted(frozen.size)
    np.testing.assert_array_equal(f(x, s).numpy(), want)
    np.testing.assert_array_equal(f(ef.constant(frozen), s).numpy(), want)


# -- a variable's updates as one region with several results (update_loops) ------------------

def _merged(graph):
    return [n for n in graph.nodes if n.op == "FusedElementwise" and n.num_outputs > 1]


@pytest.mark.parametrize("form", ["keras", "benchmark"])
def test_adam_updates_of_a_variable_merge_into_one_region(form):
    pytest.importorskip("numba")
    if form == "keras":
        make, grads = _keras_adam_pair((300, 257), np.float32)
        step, variables = make()
        args = (grads[0], ef.constant(np.float32(0.01)))
    else:
        traced, _, variables, _, grads = _adam_pair((300, 257))
        step = traced.python_function
        args = (grads[0], ef.constant(np.float32(0.01)))
    graph = passes.optimize(ef.function(step).get_concrete_function(*args).graph)
    merged = _merged(graph)
    assert len(merged) == 1 and merged[0].num_outputs == 3
    k = graph.nodes.index(merged[0])
    assigned = [n.attrs["variable"] for n in graph.nodes[k + 1:k + 4]]
    assert [n.op for n in graph.nodes[k + 1:k + 4]] == ["AssignVariableOp"] * 3
    p, m, v = (next(i for i, w in enumerate(graph.variables) if w is var)
               for var in variables)
    assert assigned == [m, v, p]
    # Without the compiled kernels the regions stay apart (their numpy form is faster).
    from eagerflow.backend import cpu_jit
    try:
        cpu_jit.set_enabled(False)
        graph = passes.optimize(ef.function(step).get_concrete_function(*args).graph)
    finally:
        cpu_jit.set_enabled(True)
    assert not _merged(graph)


def test_a_merged_update_falls_back_to_its_numpy_form_with_the_same_bits():
    # Built with the loop, then run with the compiled kernels off: the node's numpy form.
    from eagerflow.backend import cpu_jit

    pytest.importorskip("numba")
    make, grads = _keras_adam_pair((300, 257), np.float32)
    alpha = ef.constant(np.float32(0.01))
    step, tvars = make()
    traced = ef.function(step)
    eager, evars = make()
    traced(grads[0], alpha)
    eager(grads[0], alpha)
    try:
        cpu_jit.set_enabled(False)
        for g in grads[1:]:
            np.testing.assert_array_equal(_bits(traced(g, alpha).numpy()),
                                          _bits(eager(g, alpha).numpy()))
    finally:
        cpu_jit.set_enabled(True)
    for t, e in zip(tvars, evars):
        np.testing.assert_array_equal(_bits(t.numpy()), _bits(e.numpy()))


@pytest.mark.parametrize("form", ["read_between", "write_between", "returned"])
def test_updates_stay_apart_when_moving_them_could_be_seen(form):
    pytest.importorskip("numba")
    shape = (300, 257)
    start = RNG.standard_normal(shape).astype(np.float32)
    grads = [ef.constant(RNG.standard_normal(shape).astype(np.float32)) for _ in range(2)]

    def make():
        p, m = ef.Variable(start.copy()), ef.Variable(np.zeros(shape, np.float32))

        def step(g):
            m.assign(0.9 * m + 0.1 * g)
            seen = None
            if form == "read_between":
                seen = m.read_value() * 2.0  # reads the new m before p's update
            elif form == "write_between":
                m.assign_add(g * 0.0 + 1.0)
            mid = m.read_value() if form == "returned" else None
            p.assign_sub(0.01 * m)
            return [t for t in (seen, mid, p.read_value() * 1.0) if t is not None]
        return step, [p, m]

    step, tvars = make()
    traced = ef.function(step)
    eager, evars = make()
    graph = passes.optimize(traced.get_concrete_function(grads[0]).graph)
    if form != "write_between":
        assert not _merged(graph)
    for g in grads:
        for a, b in zip(traced(g), eager(g)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    for t, e in zip(tvars, evars):
        np.testing.assert_array_equal(t.numpy(), e.numpy())


def test_a_merged_update_round_trips_through_the_serializer_and_is_validated():
    from eagerflow import errors
    from eagerflow.function import graph_validation, serialize

    pytest.importorskip("numba")
    traced, _, _, _, grads = _adam_pair((300, 257))
    graph = passes.optimize(traced.get_concrete_function(
        grads[0], ef.constant(np.float32(0.01))).graph)
    node = _merged(graph)[0]
    data = serialize.proto_to_bytes(serialize.graph_to_proto(graph, embed_variables=True))
    loaded = serialize.proto_to_graph(serialize.bytes_to_proto(data))
    assert _merged(loaded)[0].attrs == node.attrs
    assert _merged(loaded)[0].num_outputs == 3
    node.attrs = dict(node.attrs, outputs=(0, 0, 1))
    with pytest.raises(errors.OpError, match="inconsistent sub-program"):
        graph_validation._check_fused(node, "node %s" % node.name)
