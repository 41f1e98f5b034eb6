"""Graph optimizer passes: each rewrite on hand-built and traced graphs, equal results to the
unoptimized graph, side effects kept in order, options, fusion (CPU code, CUDA source).
"""

import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes, errors
from eagerflow.function import optimizer_config, passes
from eagerflow.function.executor import Executor
from eagerflow.function.graph import Graph
from eagerflow.function.passes import (
    algebraic, constant_folding, cse, dce, fused_step, fusion,
)
from eagerflow.function.passes.common import copy_graph
from eagerflow.ops import registry
from eagerflow.ops.registry import AbstractValue, zero_avals_eval

OFF = {"disable_meta_optimizer": True}


@pytest.fixture(autouse=True)
def _default_options():
    optimizer_config.reset()
    yield
    optimizer_config.reset()


# -- helpers ---------------------------------------------------------------------------------

def placeholder(g, shape, dtype=dtypes.float32, name="x"):
    return (g.add_placeholder(AbstractValue(shape, dtype), name), 0)


def const(g, value, dtype=np.float32):
    array = np.asarray(value, dtype=dtype)
    aval = AbstractValue(array.shape, dtypes.from_numpy(array.dtype))
    return (g.add_node("Const", (), {}, (aval,), value=array, name="const"), 0)


def op(g, name, *inputs, **attrs):
    prim = registry.get(name)
    avals = [src.avals[i] for src, i in inputs]
    out = prim.shape_fn(*avals, **attrs) if prim.shape_fn else zero_avals_eval(prim, avals, attrs)
    out = (out,) if isinstance(out, AbstractValue) else tuple(out)
    node = g.add_node(name, inputs, attrs, out, prim=prim, stateful=prim.stateful)
    return (node, 0) if prim.single else [(node, i) for i in range(len(out))]


def run(graph, *args):
    captures = [c._value for _, c in graph.captures]
    return Executor(graph).run([np.asarray(a) for a in args], captures)


def ops_of(graph):
    """The computing ops, in order (placeholders and constants left out)."""
    return [n.op for n in graph.nodes if n.op not in ("Placeholder", "Const")]


def traced(fn, *specs):
    return ef.function(fn).get_concrete_function(*specs).graph


def assert_same(graph, *args, **options):
    """The optimized graph computes exactly what the traced graph computes."""
    raw = run(graph, *args)
    opt = run(passes.optimize(graph, options or None), *args)
    assert len(raw) == len(opt)
    for a, b in zip(raw, opt):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.normal(size=shape).astype(dtype)


# -- the driver ------------------------------------------------------------------------------

def test_optimize_returns_a_new_graph_and_leaves_the_traced_one_alone():
    graph = traced(lambda x: ef.tanh(x) * 1.0 + ef.tanh(x), ef.TensorSpec([4]))
    before = graph.pretty()
    nodes = list(graph.nodes)
    out = passes.optimize(graph)
    assert out is not graph and graph.pretty() == before and graph.nodes == nodes
    assert not set(out.nodes) & set(nodes)
    assert ops_of(out) == ["FusedElementwise"]
    assert_same(graph, rand(4))


def test_copy_keeps_calling_convention():
    g = Graph("g")
    x = placeholder(g, [3])
    y = placeholder(g, [3], name="y")
    g.outputs = [op(g, "AddV2", x, y), x]
    c = copy_graph(g)
    assert [n.name for n in c.inputs] == ["x", "y"]
    assert c.outputs[1][0] is c.inputs[0]
    assert [n.id for n in c.nodes] == [n.id for n in g.nodes]


# -- dead code elimination ---------------------------------------------------------------------

def test_dce_removes_unused_nodes_keeps_effects_and_placeholders():
    g = Graph("g")
    x = placeholder(g, [3])
    unused = placeholder(g, [3], name="unused")
    op(g, "Tanh", op(g, "Exp", x))  # dead chain
    seed = op(g, "RandomUniform", **_random_attrs())  # stateful: kept although unused
    g.outputs = [op(g, "Neg", x)]
    assert dce.run(g)
    assert ops_of(g) == ["RandomUniform", "Neg"]
    assert unused[0] in g.nodes and seed[0] in g.nodes
    assert not dce.run(g)


def _random_attrs():
    return {"dtype": "float32", "seed": 0, "seed2": 0, "shape": (3,), "stream": 1}


def test_dce_keeps_inputs_of_assignments():
    v = ef.Variable(np.zeros(3, np.float32))

    def f(x):
        v.assign(ef.exp(x))
        ef.tanh(x)  # dead
        return ef.constant(1.0)

    graph = traced(f, ef.TensorSpec([3]))
    out = passes.optimize(graph)
    assert "Tanh" not in ops_of(out) and "AssignVariableOp" in ops_of(out)
    Executor(out).run([np.ones(3, np.float32)], [c._value for _, c in out.captures])
    np.testing.assert_allclose(v.numpy(), np.exp(np.ones(3, np.float32)))


# -- common subexpressions -------------------------------------------------------------------

def test_cse_merges_equal_nodes_and_constants():
    g = Graph("g")
    x = placeholder(g, [4])
    a = op(g, "Mul", op(g, "Tanh", x), const(g, 2.0))
    b = op(g, "Mul", op(g, "Tanh", x), const(g, 2.0))
    g.outputs = [op(g, "AddV2", a, b)]
    assert cse.run(g)
    assert ops_of(g) == ["Tanh", "Mul", "AddV2"]
    assert sum(n.op == "Const" for n in g.nodes) == 1
    addv2 = g.nodes[-1]
    assert addv2.inputs[0] == addv2.inputs[1]


def test_cse_keeps_different_attrs_signed_zeros_and_stateful_ops_apart():
    g = Graph("g")
    x = placeholder(g, [2, 3])
    t1 = op(g, "Transpose", x, perm=(1, 0))
    t2 = op(g, "Transpose", x, perm=None)
    c1 = const(g, 0.0)
    c2 = const(g, -0.0)
    r1 = op(g, "RandomUniform", **_random_attrs())
    r2 = op(g, "RandomUniform", **_random_attrs())
    g.outputs = [t1, t2, c1, c2, r1, r2]
    assert not cse.run(g)


def test_cse_reads_merge_only_between_writes():
    v = ef.Variable(np.ones(3, np.float32))

    def f(x):
        a = v.read_value() * 2.0
        b = v.read_value() * 2.0  # same epoch: merges with a
        v.assign(x)
        c = v.read_value() * 2.0  # after the write: must see x
        return a + b + c

    graph = traced(f, ef.TensorSpec([3]))
    out = passes.optimize(graph)
    reads = [n for n in out.nodes if n.op == "ReadVariableOp"]
    assert len(reads) == 2
    order = [n.op for n in out.nodes]
    assert order.index("AssignVariableOp") < out.nodes.index(reads[1])
    x = np.array([5.0, 6.0, 7.0], np.float32)
    v.assign(np.ones(3, np.float32))
    expected = run(graph, x)[0]
    v.assign(np.ones(3, np.float32))
    got = run(out, x)[0]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, 2 + 2 + 2 * x)


# -- constant folding ------------------------------------------------------------------------

def test_constant_folding_evaluates_constant_subgraphs():
    g = Graph("g")
    x = placeholder(g, [3])
    c = op(g, "Exp", op(g, "AddV2", const(g, [1.0, 2.0, 3.0]), const(g, 1.0)))
    g.outputs = [op(g, "Mul", x, c)]
    expected = run(g, np.ones(3, np.float32))[0]
    assert constant_folding.run(g)
    dce.run(g)
    assert ops_of(g) == ["Mul"]
    folded = g.nodes[-1].inputs[1][0]
    assert folded.value.dtype == np.float32 and folded.avals[0].shape == (3,)
    np.testing.assert_array_equal(run(g, np.ones(3, np.float32))[0], expected)


def test_constant_folding_keeps_dtype_and_leaves_failures_and_big_results():
    g = Graph("g")
    ints = op(g, "FloorDiv", const(g, [1, 2], np.int32), const(g, [0, 1], np.int32))
    big = op(g, "BroadcastTo", const(g, 1.0), shape=(1001, 1000))
    cast = op(g, "Cast", const(g, [1.5, -2.5]), dtype="int64")
    g.outputs = [ints, big, cast]
    constant_folding.run(g)
    assert [n.op for n in g.nodes if n.op != "Const"] == ["FloorDiv", "BroadcastTo"]
    assert g.outputs[2][0].value.dtype == np.int64
    with pytest.raises(errors.InvalidArgumentError, match="division by zero"):
        run(g)


def test_constant_folding_of_shapes_and_fills():
    graph = traced(lambda x: ef.cast(ef.shape(x), ef.float32) + ef.ones_like(x) +
                   ef.cast(ef.size(x), ef.float32), ef.TensorSpec([2, 2]))
    out = passes.optimize(graph, {"remapping": False})
    assert "Shape" not in ops_of(out) and "Size" not in ops_of(out)
    assert "OnesLike" not in ops_of(out)
    assert_same(graph, rand(2, 2))
    unknown = traced(lambda x: ef.shape(x), ef.TensorSpec([None, 2]))
    assert "Shape" in ops_of(passes.optimize(unknown))


def test_random_ops_are_never_folded():
    graph = traced(lambda: ef.random.uniform([3]) * 2.0)
    out = passes.optimize(graph)
    assert "RandomUniform" in ops_of(out)
    a, b = run(out)[0], run(out)[0]
    assert not np.array_equal(a, b)


# -- algebraic simplification ----------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: x * 1.0, lambda x: 1.0 * x, lambda x: x / 1.0, lambda x: x ** 1.0,
    lambda x: x - 0.0, lambda x: x + (-0.0), lambda x: ef.negative(ef.negative(x)),
    lambda x: ef.cast(x, ef.float32), lambda x: ef.identity(x),
    lambda x: ef.stop_gradient(x), lambda x: ef.reshape(x, [2, 3]),
    lambda x: ef.transpose(ef.transpose(x)),
    lambda x: ef.transpose(ef.transpose(x, [1, 0]), [1, 0]),
])
def test_algebraic_identities_remove_the_op(fn):
    graph = traced(lambda x: ef.exp(fn(x)), ef.TensorSpec([2, 3]))
    out = passes.optimize(graph, {"remapping": False})
    assert ops_of(out) == ["Exp"], out.pretty()
    x = rand(2, 3)
    x[0, 0] = -0.0
    x[0, 1] = np.nan
    assert_same(graph, x)


@pytest.mark.parametrize("fn", [
    lambda x: x + 0.0,  # -0.0 + 0.0 is +0.0: not the identity
    lambda x: x * ef.ones([2, 3]),  # broadcasting grows x
    lambda x: x * ef.constant([1.0, 2.0, 1.0]),
    lambda x: ef.cast(x, ef.float64),
])
def test_algebraic_keeps_ops_that_change_values_or_shapes(fn):
    graph = traced(fn, ef.TensorSpec([3]))
    out = passes.optimize(graph, {"remapping": False})
    assert len(ops_of(out)) == 1
    x = np.array([-0.0, 1.0, np.inf], np.float32)
    assert_same(graph, x)


def test_algebraic_integer_zero_and_unknown_dims():
    graph = traced(lambda x: ef.abs((x + 0) - 0), ef.TensorSpec([None], ef.int32))
    out = passes.optimize(graph)
    assert ops_of(out) == ["Abs"]
    assert out.nodes[-1].inputs[0][0] is out.inputs[0]
    assert_same(graph, np.arange(5, dtype=np.int32))
    # A constant of shape [3] would broadcast an [None] input of size 1: kept.
    graph = traced(lambda x: x * ef.ones([3]), ef.TensorSpec([None]))
    assert ops_of(passes.optimize(graph)) == ["Mul"]


def test_transpose_and_reshape_chains_compose():
    def f(x):
        t = ef.transpose(ef.transpose(x, [1, 2, 0]), [2, 0, 1])  # identity
        u = ef.transpose(ef.transpose(x, [1, 0, 2]), [0, 2, 1])
        r = ef.reshape(ef.reshape(x, [6, 4]), [4, -1])
        return ef.exp(t), u, r

    graph = traced(f, ef.TensorSpec([2, 3, 4]))
    out = passes.optimize(graph)
    assert ops_of(out) == ["Transpose", "Reshape", "Exp"]
    by_op = {n.op: n for n in out.nodes}
    assert by_op["Exp"].inputs[0][0] is out.inputs[0]
    assert by_op["Transpose"].attrs["perm"] == (1, 2, 0)
    assert by_op["Reshape"].inputs[0][0] is out.inputs[0]
    assert_same(graph, rand(2, 3, 4))


def test_identity_on_another_device_is_kept():
    g = Graph("g")
    x = placeholder(g, [3])
    copy = op(g, "Identity", x)
    copy[0].device = "/job:localhost/replica:0/task:0/device:CPU:7"  # not this device
    same = op(g, "StopGradient", op(g, "Exp", copy))
    g.outputs = [op(g, "Neg", same)]
    assert algebraic.remove_identities(g)
    assert ops_of(g) == ["Identity", "Exp", "Neg"]


# -- stateful ordering -----------------------------------------------------------------------

def test_assign_then_read_sees_the_new_value():
    v = ef.Variable(np.zeros(3, np.float32))

    @ef.function
    def f(x):
        before = v.read_value() * 1.0
        v.assign(x)
        after = v.read_value() * 1.0
        v.assign_add(x)
        last = v.read_value()
        return before, after, last

    before, after, last = f(ef.constant([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(before.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(after.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(last.numpy(), [2, 4, 6])
    graph = passes.optimize(f.get_concrete_function(ef.TensorSpec([3])).graph)
    effects = [n.op for n in graph.nodes if n.stateful]
    assert effects == ["ReadVariableOp", "AssignVariableOp", "ReadVariableOp",
                       "AssignAddVariableOp", "ReadVariableOp"]



def test_traced_updates_write_into_a_private_variable_buffer():
    # Nothing else holds the variable's array: assign_add/assign_sub update it in place.
    v = ef.Variable(np.zeros(1000, np.float32))

    @ef.function
    def step(x):
        v.assign_add(x * 2.0)
        v.assign_sub(x)

    x = ef.constant(np.ones(1000, np.float32))
    step(x)
    buffer = id(v._value)
    step(x)
    assert id(v._value) == buffer
    np.testing.assert_array_equal(v.numpy(), np.full(1000, 2.0, np.float32))


def test_traced_updates_leave_values_read_earlier_alone():
    v = ef.Variable(np.zeros(4, np.float32))

    @ef.function
    def step(x):
        v.assign_add(x)

    held = v.read_value()  # a tensor sharing the variable's current array
    step(ef.constant(np.ones(4, np.float32)))
    np.testing.assert_array_equal(held.numpy(), np.zeros(4, np.float32))
    np.testing.assert_array_equal(v.numpy(), np.ones(4, np.float32))

def test_prints_stay_in_order_and_debug_stripper_removes_them(capsys):
    def f(x):
        ef.print("first", x, output_stream=sys.stderr)
        y = x * 2.0
        ef.print("second", y, output_stream=sys.stderr)
        return y

    graph = traced(f, ef.TensorSpec([2]))
    out = passes.optimize(graph)
    assert [n.op for n in out.nodes if n.op == "Print"] == ["Print", "Print"]
    run(out, np.ones(2, np.float32))
    err = capsys.readouterr().err
    assert err.index("first") < err.index("second")
    stripped = passes.optimize(graph, {"debug_stripper": True})
    assert "Print" not in ops_of(stripped)


# -- fusion -----------------------------------------------------------------------------------

def test_fusion_collapses_a_chain_and_matches():
    def f(x, y):
        z = ef.tanh(x) * y + 1.0
        return ef.maximum(ef.abs(z), 0.5) - ef.sigmoid(z)

    graph = traced(f, ef.TensorSpec([4, 5]), ef.TensorSpec([5]))
    out = passes.optimize(graph)
    assert ops_of(out) == ["FusedElementwise"]
    fused = out.nodes[-1]
    assert fused.attrs["ops"][0] == "Tanh" and fused.attrs["ops"][-1] == "Sub"
    for key, value in fused.attrs.items():
        assert isinstance(value, tuple) and all(isinstance(v, (str, int)) for v in value), key
    assert_same(graph, rand(4, 5), rand(5))


def test_fusion_with_broadcasting_and_mixed_dtypes():
    def f(x, n, c):
        a = ef.cast(n, ef.float32) * x  # int32[3, 1] * float32[4] -> [3, 4]
        b = ef.where(c, a, ef.exp(a))  # bool[4]
        return ef.cast(b > 1.0, ef.int32) + n

    specs = (ef.TensorSpec([4]), ef.TensorSpec([3, 1], ef.int32), ef.TensorSpec([4], ef.bool))
    graph = traced(f, *specs)
    out = passes.optimize(graph)
    assert ops_of(out) == ["FusedElementwise"]
    assert out.nodes[-1].avals[0] == AbstractValue((3, 4), dtypes.int32)
    args = (rand(4), np.array([[1], [-2], [3]], np.int32), np.array([True, False, True, False]))
    assert_same(graph, *args)


def test_fusion_inplace_never_writes_into_inputs_or_shared_values():
    def f(x):
        a = ef.exp(x)
        b = ef.tanh(a) + ef.sin(a)  # a has two uses inside the cluster
        return b * 2.0, x

    graph = traced(f, ef.TensorSpec([8]))
    out = passes.optimize(graph)
    fused = [n for n in out.nodes if n.op == "FusedElementwise"]
    assert len(fused) == 1
    plan = fused[0].attrs["inplace"]
    n_in = len(fused[0].inputs)
    assert all(p == -1 or p >= n_in for p in plan)
    assert any(p >= 0 for p in plan)  # the chain reuses a buffer
    x = rand(8)
    keep = x.copy()
    assert_same(graph, x)
    np.testing.assert_array_equal(x, keep)


def test_fusion_stops_at_shared_values_outputs_and_non_elementwise_ops():
    def f(x):
        a = ef.exp(x)
        b = ef.tanh(a)  # a also feeds the reduction: not absorbed into b's cluster
        s = ef.reduce_sum(a)
        c = b * 2.0
        return c + s, b  # b is an output: a cluster root, never an interior value

    graph = traced(f, ef.TensorSpec([5]))
    out = passes.optimize(graph)
    assert "Exp" in ops_of(out) and "Sum" in ops_of(out)
    for node in out.nodes:
        if node.op == "FusedElementwise":
            assert "Exp" not in node.attrs["ops"]
    assert_same(graph, rand(5))


def test_fusion_unknown_dims_and_scalars():
    def f(x, s):
        return ef.sqrt(ef.abs(x * s) + 1.0) / s

    graph = traced(f, ef.TensorSpec([None, None]), ef.TensorSpec([]))
    out = passes.optimize(graph)
    assert ops_of(out) == ["FusedElementwise"]
    assert_same(graph, rand(3, 2), np.float32(3.0))
    assert_same(graph, rand(1, 1), np.float32(-2.0))
    scalar = traced(lambda x: ef.tanh(ef.exp(x)), ef.TensorSpec([]))
    assert_same(scalar, np.float32(0.3))


def test_fused_errors_name_the_sub_op_and_the_user_line():
    def f(x, y):
        return ef.math.floordiv(x, y) + 1  # the failing line

    fn = ef.function(f)
    x = ef.constant([1, 2], ef.int32)
    with pytest.raises(errors.InvalidArgumentError) as info:
        fn(x, ef.constant([1, 0], ef.int32))
    message = str(info.value)
    assert "FloorDiv" in message and "division by zero" in message
    assert "test_passes.py" in message


def test_fused_cpu_code_is_straight_line():
    graph = traced(lambda x: ef.nn.relu(ef.tanh(x) * 3.0), ef.TensorSpec([6]))
    out = passes.optimize(graph)
    source, _ = fused_step.python_source(fused_step.Program.of(out.nodes[-1]))
    assert "K1(t0, a1, out=t0)" in source  # tanh(x) * 3.0 into tanh's buffer
    assert "K2(t1, out=t1)" in source and "for " not in source  # relu into its buffer


def test_cuda_source_for_a_chain():
    g = Graph("g")
    x = placeholder(g, [4, 3])
    n = placeholder(g, [3], dtypes.int32, name="n")
    a = op(g, "Tanh", x)
    b = op(g, "Mul", a, op(g, "Cast", n, dtype="float32"))
    c = op(g, "Relu", op(g, "AddV2", b, const(g, 1.0)))
    g.outputs = [op(g, "Greater", c, const(g, 0.5))]
    fusion.run(g)
    node = g.nodes[-1]
    assert node.op == "FusedElementwise"
    in_params, out_params, body, name = fused_step.cuda_source(fused_step.Program.of(node))
    assert in_params == "float32 in0, int32 in1, float32 in2, float32 in3"
    assert out_params == "bool out0"
    assert body == "\n".join([
        "float t0 = tanh(in0);",
        "float t1 = static_cast<float>(in1);",
        "float t2 = t0 * t1;",
        "float t3 = t2 + in2;",
        "float t4 = (t3 > (float)0 || isnan((double)t3)) ? t3 : (float)0;",
        "bool t5 = t4 > in3;",
        "out0 = t5;",
    ])
    assert name.startswith("eagerflow_fused_")


def test_cuda_expressions_cover_dtypes_and_refuse_the_rest():
    assert fused_step.cuda_expression("Relu", ["int32"], "int32", {}, ["a"]) == \
        "(a > (int)0) ? a : (int)0"
    assert fused_step.cuda_expression("Cast", ["float32"], "bool", {}, ["a"]) == "(a != 0)"
    assert fused_step.cuda_expression("LeakyRelu", ["float64"], "float64", {"alpha": 0.1},
                                      ["a"]) == "a > (double)0 ? a : a * (double)(0.1)"
    assert fused_step.cuda_expression("Tanh", ["complex64"], "complex64", {}, ["a"]) is None
    assert fused_step.cuda_expression("FloorDiv", ["int32"] * 2, "int32", {}, ["a", "b"]) is None
    assert fused_step.cuda_expression("RealDiv", ["int32"] * 2, "int32", {}, ["a", "b"]) is None


# -- options ---------------------------------------------------------------------------------

def _option_graph():
    def f(x):
        c = ef.exp(ef.constant(1.0))
        y = ef.negative(ef.negative(x))
        z = ef.identity(y) + ef.sin(x) + ef.sin(x)
        return ef.tanh(z) * c

    return traced(f, ef.TensorSpec([3]))


@pytest.mark.parametrize("option, metric", [
    ("constant_folding", "Exp"),
    ("arithmetic_optimization", "Neg"),
    ("dependency_optimization", "Identity"),
    ("common_subgraph_elimination", "Sin"),
    ("remapping", None),
    ("elementwise_fusion", None),
])
def test_each_option_disables_its_pass(option, metric):
    graph = _option_graph()

    def measure(g):
        if metric is None:
            return len(g.nodes)
        return sum(list(n.attrs.get("ops", ())).count(metric) + (n.op == metric)
                   for n in g.nodes)

    on = passes.optimize(graph)
    off = passes.optimize(graph, {option: False})
    assert measure(off) > measure(on)
    assert_same(graph, rand(3), **{option: False})
    ef.config.optimizer.set_experimental_options({option: False})
    assert measure(passes.optimize(graph)) == measure(off)


def test_disable_model_pruning_and_meta_optimizer():
    graph = traced(lambda x: (ef.exp(x), ef.tanh(x))[1], ef.TensorSpec([3]))
    assert "Exp" not in ops_of(passes.optimize(graph))
    assert "Exp" in ops_of(passes.optimize(graph, {"disable_model_pruning": True}))
    assert ops_of(passes.optimize(graph, OFF)) == ops_of(graph)
    assert ops_of(passes.optimize(graph, {"min_graph_nodes": 10})) == ops_of(graph)


def test_config_api():
    opt = ef.config.optimizer
    assert opt.get_experimental_options() == {"disable_model_pruning": False,
                                              "disable_meta_optimizer": False}
    opt.set_experimental_options({"constant_folding": False, "layout_optimizer": True})
    got = opt.get_experimental_options()
    assert got["constant_folding"] is False and got["layout_optimizer"] is True
    with pytest.raises(ValueError, match="Unknown graph optimizer option"):
        opt.set_experimental_options({"constant_foldin": True})
    with pytest.raises(ValueError):
        opt.set_experimental_options({"remapping": "yes"})
    opt.set_jit(True)
    assert opt.get_jit() == "autoclustering"
    opt.set_jit(False)
    assert opt.get_jit() == ""


def test_functions_compiled_after_setting_options_use_them():
    ef.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    f = ef.function(lambda x: ef.tanh(x) * 1.0)
    cf = f.get_concrete_function(ef.TensorSpec([2]))
    assert [n.op for n in cf.executor.graph.nodes][1:] == ["Tanh", "Const", "Mul"]
    ef.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})
    g = ef.function(lambda x: ef.tanh(x) * 1.0)
    cg = g.get_concrete_function(ef.TensorSpec([2]))
    assert [n.op for n in cg.executor.graph.nodes][1:] == ["Tanh"]


# -- realistic functions: passes on == passes off ---------------------------------------------

def _mlp(seed):
    r = np.random.default_rng(seed)
    return [ef.Variable(r.normal(size=(4, 8)).astype(np.float32)),
            ef.Variable(np.zeros(8, np.float32)),
            ef.Variable(r.normal(size=(8, 1)).astype(np.float32))]


def _train_step(variables):
    w1, b1, w2 = variables

    def step(x, y):
        with ef.GradientTape() as tape:
            h = ef.nn.relu(ef.matmul(x, w1) + b1)
            p = ef.matmul(h, w2)
            loss = ef.reduce_mean(ef.square(p - y)) + 0.0 * ef.reduce_sum(ef.identity(p))
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign_sub(0.1 * g)
        return loss

    return step


def test_mlp_training_step_same_with_and_without_passes():
    x = rand(5, 4)
    y = rand(5, 1)
    results = []
    for options in (OFF, None):
        variables = _mlp(1)
        graph = traced(_train_step(variables), ef.TensorSpec([5, 4]), ef.TensorSpec([5, 1]))
        ex = Executor(passes.optimize(graph, options))
        losses = [ex.run([x, y], [])[0] for _ in range(3)]
        results.append((losses, [v.numpy() for v in variables], len(ex.graph.nodes)))
    (l_off, v_off, n_off), (l_on, v_on, n_on) = results
    assert n_on < n_off
    for a, b in zip(l_off + v_off, l_on + v_on):
        np.testing.assert_array_equal(a, b)


def test_gradient_through_a_call_same_with_and_without_passes():
    def f(x, w):
        return ef.reduce_sum(ef.tanh(x * w) * 1.0 + ef.exp(ef.identity(x)) * w)

    x = ef.constant(rand(3, 4))
    w = ef.constant(rand(4))
    grads = []
    for options in (OFF, {}):
        ef.config.optimizer.set_experimental_options(options or {"disable_meta_optimizer":
                                                                 False})
        fn = ef.function(f)
        with ef.GradientTape() as tape:
            tape.watch([x, w])
            out = fn(x, w)
        grads.append([g.numpy() for g in tape.gradient(out, [x, w])] + [out.numpy()])
    with ef.GradientTape() as tape:
        tape.watch([x, w])
        eager = f(x, w)
    expected = tape.gradient(eager, [x, w])
    for a, b in zip(grads[0], grads[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(grads[1][0], expected[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(grads[1][1], expected[1].numpy(), rtol=1e-6)


def test_traced_equals_eager_with_passes():
    def f(x):
        y = x
        for _ in range(5):
            y = ef.maximum(ef.abs(ef.tanh(y)), 0.1) * 1.5 - 0.2
        return ef.reduce_mean(y, axis=1) + ef.transpose(ef.transpose(y))[:, 0]

    x = ef.constant(rand(3, 16))
    np.testing.assert_allclose(ef.function(f)(x).numpy(), f(x).numpy(), rtol=1e-6)


def test_control_flow_subgraphs_are_optimized():
    cond = getattr(ef, "cond", None)
    if cond is None:
        pytest.skip("control flow not available")

    def f(x):
        return cond(ef.reduce_sum(x) > 0.0, lambda: ef.tanh(x) * 1.0,
                    lambda: ef.identity(ef.exp(x)))

    graph = traced(f, ef.TensorSpec([3]))
    out = passes.optimize(graph)
    for name, sub in out.library.items():
        assert sub is not graph.library[name]
        assert "Mul" not in ops_of(sub) and "Identity" not in ops_of(sub)
    assert_same(graph, rand(3))
    assert_same(graph, -np.abs(rand(3)))


def _chain_node():
    g = Graph("g")
    x = placeholder(g, [2, 3])
    y = placeholder(g, [3], name="y")
    g.outputs = [op(g, "Sigmoid", op(g, "Mul", op(g, "Exp", x), y))]
    fusion.run(g)
    return g, g.nodes[-1]


def test_interpreted_fallback_matches():
    from eagerflow.framework import context

    g, node = _chain_node()
    x, y = rand(2, 3), rand(3)
    step = fused_step._interpreted(fused_step.Program.of(node), node, context.CPU0)
    np.testing.assert_array_equal(step(x, y), run(g, x, y)[0])


def test_gpu_step_builds_one_elementwise_kernel():
    """The GPU wiring with a stand-in for cupy (the real kernel runs only on a GPU)."""
    made = []

    class FakeKernel:
        def __init__(self, in_params, out_params, operation, name, options=()):
            made.append((in_params, out_params, operation, name, options))

        def __call__(self, *args):
            return ("launched", len(args))

    class FakeDevice:
        backend_index = 1

        class backend:
            class module:
                ElementwiseKernel = FakeKernel

    g, node = _chain_node()
    step = fused_step.fused_step(node, FakeDevice(), None)
    assert step(1, 2) == ("launched", 2)
    fused_step.fused_step(node, FakeDevice(), None)  # the compiled kernel is reused
    assert len(made) == 1
    in_params, out_params, operation, name, options = made[0]
    assert in_params == "float32 in0, float32 in1" and out_params == "float32 out0"
    assert operation.splitlines()[-2] == "float t2 = (float)1 / ((float)1 + exp(-t1));"
    assert options == ("--fmad=false",)


_UNARY = ["Tanh", "Abs", "Neg", "Exp", "Sin", "Square", "Relu", "Sigmoid", "Floor"]
_BINARY = ["AddV2", "Sub", "Mul", "Maximum", "Minimum", "RealDiv"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # x / 0 and overflow, on both sides
@pytest.mark.parametrize("seed", range(12))
def test_random_elementwise_graphs_match_unoptimized(seed):
    """Random DAGs of elementwise ops, constants, casts and shared values: exact equality."""
    r = np.random.default_rng(seed)
    g = Graph("random")
    values = [placeholder(g, [3, 4]), placeholder(g, [4], name="y"),
              placeholder(g, [3, 1], name="z")]
    for _ in range(14):
        kind = r.integers(5)
        if kind == 0:
            values.append(op(g, _UNARY[r.integers(len(_UNARY))], values[r.integers(len(values))]))
        elif kind == 1:
            a, b = values[r.integers(len(values))], values[r.integers(len(values))]
            values.append(op(g, _BINARY[r.integers(len(_BINARY))], a, b))
        elif kind == 2:
            c = const(g, r.choice([0.0, -0.0, 1.0, 2.5]))
            a = values[r.integers(len(values))]
            values.append(op(g, ["Mul", "AddV2", "Sub"][r.integers(3)],
                             *((a, c) if r.integers(2) else (c, a))))
        elif kind == 3:
            a = values[r.integers(len(values))]
            back = op(g, "Cast", op(g, "Cast", a, dtype="int32"), dtype="float32")
            values.append(back)
        else:
            a = values[r.integers(len(values))]
            values.append(op(g, "Tanh", op(g, "Identity", a)))
    picks = r.choice(np.arange(3, len(values)), size=3, replace=False)
    g.outputs = [values[int(k)] for k in picks]
    args = (rand(3, 4) * 3, rand(4), rand(3, 1))
    assert_same(g, *args)
    optimized = passes.optimize(g)
    assert len(optimized.nodes) <= len(g.nodes)


def test_fused_graph_round_trips_through_the_serializer():
    serialize = pytest.importorskip("eagerflow.function.serialize")
    graph = traced(lambda x, y: ef.nn.leaky_relu(ef.cast(x, ef.float32) * y, alpha=0.3) + 1.0,
                   ef.TensorSpec([3], ef.int32), ef.TensorSpec([2, 3]))
    optimized = passes.optimize(graph)
    assert ops_of(optimized) == ["FusedElementwise"]
    data = serialize.proto_to_bytes(serialize.graph_to_proto(optimized))
    loaded = serialize.proto_to_graph(serialize.bytes_to_proto(data))
    fused = [n for n in loaded.nodes if n.op == "FusedElementwise"]
    assert fused and fused[0].attrs == optimized.nodes[-1].attrs
    args = (np.array([1, -2, 3], np.int32), rand(2, 3))
    np.testing.assert_array_equal(run(loaded, *args)[0], run(graph, *args)[0])
