"""Generated GPU kernels for fused regions (``passes.fused_gpu``): several results written in
place, reductions at the end of a region, the fusion decisions for GPU-placed regions only,
and the eager optimizer update on a GPU as the traced one.

The first part runs anywhere: sources are built from the declarations and checked as text,
the GPU wiring runs against a stand-in for cupy, and CPU graphs are checked to compute what
they computed before. The part marked ``gpu`` compiles and runs the kernels and compares
them with the interpreted GPU path and numpy; it is skipped without cupy and a GPU.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.function import optimizer_config, passes
from eagerflow.function.passes import (
    assign_update, fused_gpu, fused_step, fusion, update_loops,
)
from eagerflow.keras.optimizers import SGD, Adam, RMSprop, fused_updates
from eagerflow.ops import registry


@pytest.fixture(autouse=True)
def _default_options():
    optimizer_config.reset()
    yield
    optimizer_config.reset()


class FakeGPU:
    """What the passes read of a resolved GPU device."""

    backend_index = 1

    def __repr__(self):
        return "FakeGPU"


GPU = FakeGPU()


@pytest.fixture
def on_gpu(monkeypatch):
    """Every node resolves to one GPU device in the passes that decide on placement."""
    for module in (fusion, update_loops, assign_update):
        monkeypatch.setattr(module, "resolved_device", lambda node: GPU)


def graph_of(fn, *specs):
    return ef.function(fn, autograph=False).get_concrete_function(*specs).graph


def fused_nodes(graph):
    return [n for n in graph.nodes if n.op == "FusedElementwise"]


def program(ops, arity, args, dtypes, in_dtypes, op_attrs=None, outputs=None):
    return fused_step.Program(ops, arity, args, dtypes, op_attrs or ("",) * len(ops),
                              (-1,) * len(ops), in_dtypes, outputs)


def _adam_graph():
    m = ef.Variable(np.zeros((4, 3), np.float32))
    v = ef.Variable(np.zeros((4, 3), np.float32))
    p = ef.Variable(np.ones((4, 3), np.float32))

    def step(g):
        m.assign_add((g - m) * 0.1)
        v.assign_add((ef.square(g) - v) * 0.001)
        p.assign_sub(0.01 * m / (ef.sqrt(v) + 1e-7))

    return graph_of(step, ef.TensorSpec([4, 3]))


# -- several results, in place -----------------------------------------------------------------

def test_adam_update_on_a_gpu_is_one_region_with_three_results(on_gpu):
    out = passes.optimize(_adam_graph())
    nodes = fused_nodes(out)
    assert len(nodes) == 1 and nodes[0].num_outputs == 3
    prog = fused_step.Program.of(nodes[0])
    in_params, out_params, operation, name = fused_gpu.cuda_source(prog)
    assert out_params == "float32 out0, float32 out1, float32 out2"
    assert operation.splitlines()[-3:] == [
        "out%d = t%d;" % (o, j) for o, j in enumerate(prog.outputs)]
    assert name.startswith("eagerflow_fused_")
    # The variables' reads are inputs; written in place they leave the input parameters.
    reads = [k for k, (src, _) in enumerate(nodes[0].inputs) if src.op == "ReadVariableOp"]
    assert len(reads) == 3
    order = {src.attrs["variable"]: k for k, (src, _) in enumerate(nodes[0].inputs)
             if src.op == "ReadVariableOp"}
    # Each result's assignment names the variable its input reads.
    intos = [-1, -1, -1]
    for node in out.nodes:
        if node.op == "AssignVariableOp" and node.inputs[0][0] is nodes[0]:
            intos[node.inputs[0][1]] = order[node.attrs["variable"]]
    assert sorted(intos) == sorted(reads)
    in_place = fused_gpu.cuda_source(prog, intos)
    for o, p in enumerate(intos):
        assert "float32 in%d" % p not in in_place[0]
        assert in_place[2].splitlines()[sorted(intos).index(p)] == \
            "const float in%d = out%d;" % (p, o)
    assert in_place[1] == out_params and in_place[3] != name
    # All reads of an element come before any write: the writes are the last lines.
    lines = in_place[2].splitlines()
    assert all(not line.startswith("out") for line in lines[:-3])


def test_cpu_keeps_the_adam_regions_unless_the_compiled_loops_run(monkeypatch):
    """The GPU branch of update_loops does not change CPU graphs: without the compiled
    kernels the three regions stay apart, as before."""
    from eagerflow.backend import cpu_jit

    monkeypatch.setattr(cpu_jit, "_setting", [False])
    nodes = fused_nodes(passes.optimize(_adam_graph()))
    assert [n.num_outputs for n in nodes] == [1, 1, 1]


def test_in_place_source_refuses_bad_targets():
    prog = program(("Mul", "AddV2"), (2, 2), (0, 1, 2, 1), ("float32", "float32"),
                   ("float32", "float64"), outputs=(0, 1))
    assert fused_gpu.cuda_source(prog, (1, -1)) is None  # float64 input, float32 result
    assert fused_gpu.cuda_source(prog, (0, 0)) is None  # one buffer for two results
    assert fused_gpu.cuda_source(prog, (2, -1)) is None  # no such input
    assert fused_gpu.cuda_source(prog, (0,)) is None  # one entry per result


def test_several_results_in_float64_and_ints():
    prog = program(("Mul", "Sub"), (2, 2), (0, 1, 2, 0), ("float64", "float64"),
                   ("float64", "float64"), outputs=(0, 1))
    in_params, out_params, operation, _ = fused_gpu.cuda_source(prog, (-1, 0))
    assert in_params == "float64 in1" and out_params == "float64 out0, float64 out1"
    assert operation.splitlines() == ["const double in0 = out1;", "double t0 = in0 * in1;",
                                      "double t1 = t0 - in0;", "out0 = t0;", "out1 = t1;"]
    ints = program(("AddV2", "Neg"), (2, 1), (0, 1, 2), ("int32", "int32"),
                   ("int32", "int32"), outputs=(0, 1))
    assert fused_gpu.cuda_source(ints)[2].splitlines()[:2] == ["int t0 = in0 + in1;",
                                                               "int t1 = -t0;"]


def test_refused_when_a_sub_op_has_no_expression():
    attrs = ("(('alpha', 'x'),)", "")  # a non-number attribute: no expression
    prog = program(("LeakyRelu", "Neg"), (1, 1), (0, 1), ("float32", "float32"),
                   ("float32",), attrs, outputs=(0, 1))
    assert fused_gpu.cuda_source(prog) is None
    assert fused_gpu.cuda_source(prog, (0, -1)) is None
    complex_ = program(("Neg", "Sum"), (1, 1), (0, 1), ("complex64", "complex64"),
                       ("complex64",), ("", "(('axis', None), ('keepdims', False))"))
    assert fused_gpu.reduction_source(complex_) is None


# -- reductions ----------------------------------------------------------------------------------

def _reduction_program(reduction, dtype="float32", axis=(1,), keepdims=False):
    attrs = "(('axis', %r), ('keepdims', %r))" % (axis, keepdims)
    return program(("Mul", "Exp", reduction), (2, 1, 1), (0, 1, 2, 3),
                   (dtype,) * 3, (dtype, dtype), ("", "", attrs))


@pytest.mark.parametrize("dtype,ctype", [("float32", "float"), ("float64", "double")])
def test_reduction_kernel_fields(dtype, ctype):
    sums = fused_gpu.reduction_source(_reduction_program("Sum", dtype))
    assert sums["in_params"] == "%s in0, %s in1" % (dtype, dtype)
    assert sums["out_params"] == "%s out0" % dtype
    assert sums["map_expr"] == "eagerflow_map(in0, in1)"
    assert sums["reduce_expr"] == "a + b" and sums["identity"] == "0"
    assert sums["post_map_expr"] == "out0 = a" and sums["reduce_type"] == ctype
    assert sums["preamble"].splitlines() == [
        "__device__ __forceinline__ %s eagerflow_map(const %s in0, const %s in1) {"
        % (ctype, ctype, ctype),
        "    %s t0 = in0 * in1;" % ctype, "    %s t1 = exp(t0);" % ctype,
        "    return t1;", "}"]
    assert sums["name"].startswith("eagerflow_reduce_")
    mean = fused_gpu.reduction_source(_reduction_program("Mean", dtype))
    assert mean["post_map_expr"] == "out0 = a / (%s)(_in_ind.size() / _out_ind.size())" % ctype
    assert mean["preamble"] == sums["preamble"] and mean["name"] != sums["name"]
    top = fused_gpu.reduction_source(_reduction_program("Max", dtype))
    assert top["reduce_expr"] == "(a >= b || isnan((double)a)) ? a : b"
    assert top["identity"] == "-" + fused_gpu._INF[dtype]


def test_reductions_declare_their_gpu_form_and_others_do_not():
    for name in ("Sum", "Mean", "Max"):
        allowed, reduce_expr, identity, post_map = registry.get(name).gpu_reduce
        assert allowed == {"float32", "float64"} and "out0" in post_map
    for name in ("Prod", "Min", "Any", "All", "ArgMax"):
        assert registry.get(name).gpu_reduce is None
    assert fused_gpu.reduction_source(_reduction_program("Prod")) is None
    ints = program(("Neg", "Sum"), (1, 1), (0, 1), ("int32", "int32"), ("int32",),
                   ("", "(('axis', None), ('keepdims', False))"))
    assert fused_gpu.reduction_source(ints) is None  # declared for floats only


def _sum_of_squares(x):
    return ef.reduce_sum(ef.square(x) * 0.5, axis=1)


def test_the_reduction_joins_a_region_on_a_gpu_only(on_gpu):
    graph = graph_of(_sum_of_squares, ef.TensorSpec([8, 6]))
    nodes = fused_nodes(passes.optimize(graph))
    assert len(nodes) == 1
    assert nodes[0].attrs["ops"] == ("Square", "Mul", "Sum")
    assert nodes[0].avals[0].shape == (8,)
    fields = fused_gpu.reduction_source(fused_step.Program.of(nodes[0]))
    assert fields is not None and fields["reduce_expr"] == "a + b"


def test_one_op_and_a_mean_fuse_on_a_gpu(on_gpu):
    graph = graph_of(lambda x: ef.reduce_mean(ef.exp(x), axis=0, keepdims=True),
                     ef.TensorSpec([5, 3]))
    nodes = fused_nodes(passes.optimize(graph))
    assert [n.attrs["ops"] for n in nodes] == [("Exp", "Mean")]
    assert nodes[0].avals[0].shape == (1, 3)


def test_no_reduction_joins_when_the_region_has_other_readers(on_gpu):
    def f(x):
        y = ef.square(x) * 0.5
        return ef.reduce_max(y, axis=1), y

    nodes = fused_nodes(passes.optimize(graph_of(f, ef.TensorSpec([4, 4]))))
    assert [n.attrs["ops"] for n in nodes] == [("Square", "Mul")]


def test_no_reduction_joins_for_unknown_shapes_or_other_dtypes(on_gpu):
    graph = graph_of(_sum_of_squares, ef.TensorSpec([None, 6]))
    assert all("Sum" not in n.attrs["ops"] for n in fused_nodes(passes.optimize(graph)))
    graph = graph_of(lambda x: ef.reduce_sum(ef.square(x) + 1, axis=0),
                     ef.TensorSpec([4], ef.int32))
    assert all("Sum" not in n.attrs["ops"] for n in fused_nodes(passes.optimize(graph)))


def test_cpu_graphs_keep_their_reductions_and_values():
    graph = graph_of(_sum_of_squares, ef.TensorSpec([8, 6]))
    out = passes.optimize(graph)
    assert [n.attrs["ops"] for n in fused_nodes(out)] == [("Square", "Mul")]
    assert [n.op for n in out.nodes][-1] == "Sum"
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    f = ef.function(_sum_of_squares, autograph=False)
    expected = np.add.reduce(np.square(x) * np.float32(0.5), axis=1)
    np.testing.assert_array_equal(f(ef.constant(x)).numpy(), expected)


def test_a_loaded_reduction_region_runs_on_the_cpu():
    """A region ending in a reduction (made for a GPU) run by a CPU: the numpy form."""
    from eagerflow.framework import context

    g = graph_of(_sum_of_squares, ef.TensorSpec([300, 400]))
    monkey = pytest.MonkeyPatch()
    monkey.setattr(fusion, "resolved_device", lambda node: GPU)
    try:
        out = passes.optimize(g)
    finally:
        monkey.undo()
    node = fused_nodes(out)[0]
    step = fused_step.fused_step(node, context.CPU0, None)
    x = np.random.default_rng(1).standard_normal((300, 400)).astype(np.float32)
    half = np.float32(0.5)
    np.testing.assert_array_equal(step(x, half), np.add.reduce(np.square(x) * half, axis=1))
    assert "for " not in step.source


# -- the GPU wiring against a stand-in for cupy ---------------------------------------------------

class FakeCupy:
    """Records kernels made and launched; arrays are numpy arrays."""

    ndarray = np.ndarray

    def __init__(self):
        self.made, self.calls = [], []
        cupy = self

        class ElementwiseKernel:
            def __init__(self, in_params, out_params, operation, name, options=()):
                cupy.made.append(("elementwise", in_params, out_params, operation, options))
                self.n_in = in_params.count(",") + 1 if in_params else 0
                self.n_out = out_params.count(",") + 1

            def __call__(self, *args):
                cupy.calls.append(tuple(map(id, args)))  # no references: they are counted
                outs = args[self.n_in:] if len(args) > self.n_in else tuple(
                    np.empty(np.shape(args[0]), np.float32) for _ in range(self.n_out))
                return tuple(outs) if self.n_out > 1 else outs[0]

        class ReductionKernel:
            def __init__(self, *args, **kwargs):
                cupy.made.append(("reduction", args, kwargs))

            def __call__(self, *args, **kwargs):
                cupy.calls.append((args, kwargs))
                return "reduced"

        self.ElementwiseKernel = ElementwiseKernel
        self.ReductionKernel = ReductionKernel

    @staticmethod
    def empty(shape, dtype):
        return np.empty(shape, dtype)


class FakeDevice:
    backend_index = 1

    def __init__(self, cupy):
        self.backend = type("B", (), {"module": cupy, "index": 1})()


@pytest.fixture
def fresh_kernels(monkeypatch):
    monkeypatch.setattr(fused_gpu, "_KERNELS", {})


def executor_call(step, values):
    """Calls ``step`` as the executor's generated code does: one local per value, passed
    positionally (``values`` is emptied, so that it holds no reference)."""
    names = ", ".join("v%d" % k for k in range(len(values)))
    env = {"step": step}
    exec("def run(box):\n    %s, = box\n    box.clear()\n    return step(%s)\n" % (  # noqa: S102
        names, names), env)
    return env["run"](values)


def _inputs(node):
    return [np.zeros((4, 3), np.float32) if src.avals[i].shape == (4, 3) else np.float32(0.5)
            for src, i in node.inputs]


def test_several_results_write_into_private_variable_buffers(on_gpu, fresh_kernels):
    out = passes.optimize(_adam_graph())
    node = fused_nodes(out)[0]
    reads = [k for k, (src, _) in enumerate(node.inputs) if src.op == "ReadVariableOp"]
    order = {src.attrs["variable"]: k for k, (src, _) in enumerate(node.inputs)
             if src.op == "ReadVariableOp"}
    pairs = tuple((n.inputs[0][1], order[n.attrs["variable"]]) for n in out.nodes
                  if n.op == "AssignVariableOp" and n.inputs[0][0] is node)
    assert sorted(p for _, p in pairs) == reads
    cupy = FakeCupy()
    step = fused_step._build_gpu(fused_step.Program.of(node), node, FakeDevice(cupy), pairs)
    args = _inputs(node)  # the executor's locals
    holders = [args[p] for p in reads]  # the variables' own references
    n = len(args)
    results = executor_call(step, list(args))  # ``args`` holds every buffer once more
    assert len(cupy.calls[-1]) == n  # the inputs only: cupy allocates the results
    assert not any(r is a for r in results for a in args)
    results = executor_call(step, args)
    launched = cupy.calls[-1]
    assert len(launched) == n  # each variable's read left the inputs for an output
    for o, p in pairs:
        assert results[o] is holders[reads.index(p)]
        assert id(holders[reads.index(p)]) not in launched[:-3]
    made = [m for m in cupy.made if m[0] == "elementwise"]
    assert len(made) == 2 and all(m[4] == ("--fmad=false",) for m in made)
    assert made[1][3].splitlines()[0].startswith("const float in")
    # A buffer of another dtype is never a result's.
    args = _inputs(node)
    other = args[reads[0]] = np.zeros((4, 3), np.float64)
    holders = [args[p] for p in reads]
    results = executor_call(step, args)
    assert not any(r is other for r in results)
    assert sum(r is h for r in results for h in holders) == 2


def test_single_result_region_writes_into_its_variable(on_gpu, fresh_kernels):
    p = ef.Variable(np.ones(6, np.float32))
    graph = graph_of(lambda g: p.assign_sub(0.5 * ef.tanh(g), read_value=False),
                     ef.TensorSpec([6]))
    node = fused_nodes(passes.optimize(graph))[0]
    read = next(k for k, (src, _) in enumerate(node.inputs) if src.op == "ReadVariableOp")
    cupy = FakeCupy()
    step = fused_step._build_gpu(fused_step.Program.of(node), node, FakeDevice(cupy), (read,))
    buffer = np.ones(6, np.float32)
    holder = [buffer]
    inputs = [np.zeros(6, np.float32) if k != read else buffer
              for k, (src, i) in enumerate(node.inputs)]
    inputs = [np.float32(0.5) if node.inputs[k][0].avals[node.inputs[k][1]].shape == () else a
              for k, a in enumerate(inputs)]
    del buffer
    assert executor_call(step, inputs) is holder[0]
    assert "const float in%d = out0;" % read in cupy.made[-1][3]


def test_reduction_region_launches_one_reduction_kernel(on_gpu, fresh_kernels):
    node = fused_nodes(passes.optimize(graph_of(_sum_of_squares, ef.TensorSpec([8, 6]))))[0]
    cupy = FakeCupy()
    step = fused_step.fused_step(node, FakeDevice(cupy), None)
    assert step(np.zeros((8, 6), np.float32), np.float32(0.5)) == "reduced"
    kind, args, kwargs = cupy.made[0]
    assert kind == "reduction" and args[2] == "eagerflow_map(in0, in1)"
    assert args[3:] == ("a + b", "out0 = a", "0")
    assert kwargs["options"] == ("--fmad=false",) and kwargs["reduce_type"] == "float"
    assert cupy.calls[0][1] == {"axis": (1,), "keepdims": False}


def test_reduction_with_unreadable_axes_runs_interpreted(fresh_kernels):
    """Axes that are not ints never reach a kernel: the sub-ops run one by one, and the
    reduction's own kernel refuses them."""
    from eagerflow.backend import numpy_backend

    class Failed(Exception):
        pass

    def fail(j, exc):
        raise Failed(j)

    device = type("D", (), {"backend_index": 1, "backend": numpy_backend})()
    node = type("N", (), {"avals": (), "name": "n"})()
    step = fused_gpu.build(_reduction_program("Sum", axis="bad"), node, device, fail)
    assert fused_gpu._KERNELS == {}
    with pytest.raises(Failed, match="2"):
        step(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


# -- the eager update on a GPU variable, as the traced one -------------------------------------

def _train(make, traced, steps=3):
    rng = np.random.default_rng(0)
    opt = make()
    ws = [ef.Variable(rng.standard_normal((5, 3)).astype(np.float32)) for _ in range(2)]
    ws.append(ef.Variable(np.ones(3, np.float32)))
    grads = np.random.default_rng(1)
    for _ in range(steps):
        gs = [ef.constant(grads.standard_normal(w.shape.as_list()).astype(np.float32))
              for w in ws]
        if traced:
            opt.build(ws)
            lr = opt._current_learning_rate()
            for g, w in zip(gs, ws):
                fused_updates.update(opt, g, w, lr)
            opt._iterations.assign_add(1)
        else:
            opt.apply_gradients(zip(gs, ws))
    return [w.numpy() for w in ws] + [s.numpy() for s in opt.variables], opt


@pytest.mark.parametrize("make", [lambda: Adam(0.01), lambda: Adam(0.01, amsgrad=True),
                                  lambda: SGD(0.1, momentum=0.9, nesterov=True),
                                  lambda: RMSprop(0.01, centered=True)])
def test_traced_update_equals_the_eager_one(make):
    eager, _ = _train(make, False)
    traced, opt = _train(make, True)
    for a, b in zip(eager, traced):
        np.testing.assert_array_equal(a, b)
    # One trace per variable spec: the two [5, 3] variables share one, bound to each.
    assert fused_updates._TRACED[opt].experimental_get_tracing_count() == 2


def test_cpu_variables_keep_the_eager_update():
    opt = Adam()
    w = ef.Variable([1.0, 2.0])
    assert not fused_updates.wanted(opt, w)
    opt.apply_gradients([(ef.constant([0.1, 0.2]), w)])
    assert opt not in fused_updates._TRACED


def test_only_built_in_or_opted_in_optimizers_trace_their_eager_update(monkeypatch):
    w = ef.Variable([1.0])
    monkeypatch.setattr(w, "_device", GPU, raising=False)

    class Custom(SGD):
        def update_step(self, gradient, variable, learning_rate):
            variable.assign_sub(gradient * learning_rate)

    assert fused_updates.wanted(Adam(), w)
    assert not fused_updates.wanted(Custom(0.1), w)
    opted = Custom(0.1)
    opted.traced_eager_updates = True
    assert fused_updates.wanted(opted, w)
    off = Adam()
    off.traced_eager_updates = False
    assert not fused_updates.wanted(off, w)


# -- on a GPU ------------------------------------------------------------------------------------

GPU0 = "/device:GPU:0"


def _gpu_run(fn, *args):
    with ef.device(GPU0):
        values = [ef.constant(a) for a in args]
        return fn(*values)


def _chain(x, y):
    a = ef.tanh(x) * y + 1.0
    b = ef.maximum(a, 0.0) - ef.exp(-ef.abs(x))
    return ef.sqrt(ef.square(b) + 1.0) / (y + 2.0)


@pytest.mark.gpu
def test_gpu_chain_equals_interpreted_and_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 33)).astype(np.float32)
    y = rng.uniform(0.5, 1.5, (33,)).astype(np.float32)
    fused = _gpu_run(ef.function(_chain, autograph=False), x, y).numpy()
    optimizer_config.set_experimental_options({"elementwise_fusion": False})
    separate = _gpu_run(ef.function(_chain, autograph=False), x, y).numpy()
    np.testing.assert_array_equal(fused, separate)  # --fmad=false: the same rounding
    np.testing.assert_allclose(fused, _chain(ef.constant(x), ef.constant(y)).numpy(),
                               rtol=2e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("reduce,reference", [
    (ef.reduce_sum, np.sum), (ef.reduce_mean, np.mean), (ef.reduce_max, np.max)])
@pytest.mark.parametrize("axis,keepdims", [(1, False), (0, True), (None, False), ((0, 2), False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_reduction_kernel_equals_numpy(reduce, reference, axis, keepdims, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 130, 5)).astype(dtype)
    shape = x.shape

    def f(x):
        return reduce(ef.square(x) * 0.5 - x, axis=axis, keepdims=keepdims)

    traced = ef.function(f, autograph=False)
    with ef.device(GPU0):
        graph = traced.get_concrete_function(ef.TensorSpec(shape, dtype)).graph
        nodes = fused_nodes(passes.optimize(graph))
        assert nodes[-1].attrs["ops"][-1] in ("Sum", "Mean", "Max")
    got = _gpu_run(traced, x).numpy()
    expected = reference(np.square(x.astype(np.float64)) * 0.5 - x, axis=axis,
                         keepdims=keepdims)
    assert got.dtype == dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)
    optimizer_config.set_experimental_options({"elementwise_fusion": False})
    interpreted = _gpu_run(ef.function(f, autograph=False), x).numpy()
    np.testing.assert_allclose(got, interpreted, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.gpu
def test_gpu_max_propagates_nan_and_empty_is_minus_inf():
    x = np.ones((3, 4), np.float32)
    x[1, 2] = np.nan
    f = ef.function(lambda x: ef.reduce_max(ef.abs(x) * 2.0, axis=1), autograph=False)
    got = _gpu_run(f, x).numpy()
    assert np.isnan(got[1]) and got[0] == 2.0
    empty = _gpu_run(ef.function(lambda x: ef.reduce_max(ef.abs(x) * 2.0, axis=1),
                                 autograph=False), np.ones((3, 0), np.float32)).numpy()
    np.testing.assert_array_equal(empty, np.full(3, -np.inf, np.float32))


def _adam_numpy(w, g, m, v, t, lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    m = m + (g - m) * (1 - b1)
    v = v + (g * g - v) * (1 - b2)
    alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return w - alpha * m / (np.sqrt(v) + eps), m, v


@pytest.mark.gpu
@pytest.mark.parametrize("traced", [True, False])
def test_gpu_adam_steps_equal_numpy(traced):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((256, 64)).astype(np.float32)
    grads = [rng.standard_normal((256, 64)).astype(np.float32) for _ in range(3)]
    with ef.device(GPU0):
        w = ef.Variable(w0)
        opt = Adam(0.01)
        step = (lambda g: opt.apply_gradients([(g, w)]))
        if traced:
            step = ef.function(step, autograph=False)
        for g in grads:
            step(ef.constant(g))
    ref, m, v = w0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(grads, 1):
        ref, m, v = _adam_numpy(ref, g.astype(np.float64), m, v, t)
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(opt.get_slot(w, "momentum").numpy(), m, rtol=1e-5, atol=1e-7)
    if not traced:
        assert opt in fused_updates._TRACED  # the GPU variable took the traced update


@pytest.mark.gpu
def test_gpu_adam_update_is_one_kernel_written_in_place():
    with ef.device(GPU0):
        w = ef.Variable(np.ones((128, 32), np.float32))
        opt = Adam(0.01)
        opt.build([w])
        before = [w._value.data.ptr] + [s._value.data.ptr for s in opt.variables[2:]]
        step = ef.function(lambda g: opt.apply_gradients([(g, w)]), autograph=False)
        step(ef.constant(np.full((128, 32), 0.5, np.float32)))
        graph = step.get_concrete_function(ef.TensorSpec((128, 32))).graph
        big = [n for n in fused_nodes(passes.optimize(graph)) if n.avals[0].shape]
    assert len(big) == 1 and big[0].num_outputs == 3
    after = [w._value.data.ptr] + [s._value.data.ptr for s in opt.variables[2:]]
    assert after == before  # m, v and w kept their buffers
    np.testing.assert_allclose(w.numpy(), np.ones((128, 32)) - 0.01, rtol=1e-5)


def _adam_on_gpu(w0, g, traced):
    with ef.device(GPU0):
        w = ef.Variable(w0)
        opt = Adam(0.01)

        def step(g):
            opt.apply_gradients([(g, w)])

        if traced:
            step = ef.function(step, autograph=False)
        for _ in range(2):
            step(ef.constant(g))
    return w.numpy()


@pytest.mark.gpu
def test_gpu_eager_and_traced_adam_agree_bitwise():
    rng = np.random.default_rng(4)
    w0 = rng.standard_normal((64, 16)).astype(np.float32)
    g = rng.standard_normal((64, 16)).astype(np.float32)
    np.testing.assert_array_equal(_adam_on_gpu(w0, g, False), _adam_on_gpu(w0, g, True))
