"""Regression tests for gaps found by auditing the core, autodiff and @function issues
against TF 2: each test pins one fixed behaviour."""

import io
import sys

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import nest
from eagerflow.ops.random import random_stateful


# -- random -----------------------------------------------------------------------------------
def test_set_seed_none_clears_the_global_seed():
    ef.random.set_seed(3)
    ef.random.set_seed(None)
    assert random_stateful.get_global_seed() is None
    # Case 3 of set_seed (op seed only): a cleared seed restarts the op's stream, so the
    # same op seed gives the same first values again.
    a = ef.random.uniform([4], seed=7).numpy()
    ef.random.set_seed(None)
    b = ef.random.uniform([4], seed=7).numpy()
    np.testing.assert_array_equal(a, b)
    # Case 1 (no seeds at all): consecutive calls differ.
    assert not np.array_equal(ef.random.uniform([8]).numpy(), ef.random.uniform([8]).numpy())


def test_random_shape_with_a_float_is_rejected():
    with pytest.raises(ef.errors.InvalidArgumentError, match="list of ints"):
        ef.random.normal([1.5])
    assert ef.random.normal([2, 3]).shape == [2, 3]


def test_stateless_gamma_is_deterministic_and_has_the_right_moments():
    alpha = np.array([0.5, 3.0])
    beta = 2.0
    s1 = ef.random.stateless_gamma([20000, 2], seed=[1, 2], alpha=alpha, beta=beta,
                                   dtype=ef.float64)
    s2 = ef.random.stateless_gamma([20000, 2], seed=[1, 2], alpha=alpha, beta=beta,
                                   dtype=ef.float64)
    assert s1.shape == [20000, 2] and s1.dtype == ef.float64
    np.testing.assert_array_equal(s1.numpy(), s2.numpy())
    values = s1.numpy()
    assert (values > 0).all()
    # Gamma(alpha, rate beta): mean alpha / beta, variance alpha / beta**2.
    np.testing.assert_allclose(values.mean(0), alpha / beta, rtol=0.03)
    np.testing.assert_allclose(values.var(0), alpha / beta ** 2, rtol=0.06)
    other = ef.random.stateless_gamma([20000, 2], seed=[1, 3], alpha=alpha, beta=beta,
                                      dtype=ef.float64)
    assert not np.array_equal(values, other.numpy())


def test_stateless_gamma_traced_equals_eager_and_checks_its_shape():
    traced = ef.function(lambda seed: ef.random.stateless_gamma([5], seed=seed, alpha=2.0))
    np.testing.assert_array_equal(
        traced(ef.constant([4, 5])).numpy(),
        ef.random.stateless_gamma([5], seed=[4, 5], alpha=2.0).numpy())
    with pytest.raises(ef.errors.InvalidArgumentError, match="must end with"):
        ef.random.stateless_gamma([3], seed=[1, 2], alpha=[1.0, 2.0])
    assert ef.random.stateless_gamma([0, 2], seed=[1, 2], alpha=[1.0, 2.0]).shape == [0, 2]


# -- ops --------------------------------------------------------------------------------------
def test_unique_returns_namedtuples():
    x = [3, 1, 3, 2]
    out = ef.unique(x)
    assert out.y.numpy().tolist() == [3, 1, 2]
    assert out.idx.numpy().tolist() == [0, 1, 0, 2]
    y, idx = out  # still unpacks as a pair
    assert y.numpy().tolist() == [3, 1, 2]
    counted = ef.unique_with_counts(x)
    assert counted.count.numpy().tolist() == [2, 1, 1]
    assert counted.y.numpy().tolist() == [3, 1, 2]


def test_pinv_matches_numpy():
    rng = np.random.default_rng(0)
    for shape in [(3, 3), (4, 2), (2, 5), (2, 3, 4)]:
        a = rng.normal(size=shape)
        np.testing.assert_allclose(ef.linalg.pinv(a).numpy(), np.linalg.pinv(a), atol=1e-10)
    rank_one = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(ef.linalg.pinv(rank_one).numpy(), np.linalg.pinv(rank_one),
                               atol=1e-12)
    c = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    np.testing.assert_allclose(ef.linalg.pinv(c).numpy(), np.linalg.pinv(c), atol=1e-10)
    assert ef.linalg.pinv(rank_one.astype(np.float32)).dtype == ef.float32
    with pytest.raises(ef.errors.InvalidArgumentError, match="rank >= 2"):
        ef.linalg.pinv([1.0, 2.0])


def test_pinv_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 2))
    x = ef.constant(a)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(ef.linalg.pinv(x))
    grad = tape.gradient(y, x).numpy()
    eps = 1e-6
    numeric = np.zeros_like(a)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            d = np.zeros_like(a)
            d[i, j] = eps
            numeric[i, j] = (np.linalg.pinv(a + d).sum() - np.linalg.pinv(a - d).sum()) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, atol=1e-5)


def test_newaxis():
    assert ef.newaxis is None
    assert ef.constant([1, 2])[ef.newaxis].shape == [1, 2]


def test_enable_op_determinism_is_accepted():
    assert ef.config.experimental.enable_op_determinism() is None


# -- tensors and variables --------------------------------------------------------------------
def test_tensor_set_shape_validates_eagerly_and_refines_when_traced():
    t = ef.constant([1.0, 2.0])
    t.set_shape([None])
    t.set_shape([2])
    with pytest.raises(ValueError, match="not compatible"):
        t.set_shape([3])
    seen = {}

    @ef.function(input_signature=[ef.TensorSpec(None, ef.float32)])
    def f(x):
        y = x * 2.0
        y.set_shape([None, 3])
        seen["y"] = y.shape.as_list()
        z = ef.reduce_sum(y, axis=1)
        seen["z"] = z.shape.as_list()
        with pytest.raises(ValueError):
            y.set_shape([2])
        return z

    np.testing.assert_allclose(f(ef.ones([2, 3])).numpy(), [6.0, 6.0])
    assert seen == {"y": [None, 3], "z": [None]}


def test_variable_in_place_operators_raise():
    v = ef.Variable(1.0)
    with pytest.raises(RuntimeError, match="assign_add"):
        v += 1.0
    with pytest.raises(RuntimeError):
        v *= 2.0
    assert float(v) == 1.0


def test_variable_sparse_read_and_gather_nd():
    v = ef.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert v.sparse_read([2, 0]).numpy().tolist() == [[5.0, 6.0], [1.0, 2.0]]
    assert v.gather_nd([[1, 1], [0, 0]]).numpy().tolist() == [4.0, 1.0]
    with ef.GradientTape() as tape:
        y = ef.reduce_sum(v.sparse_read([2, 2]))
    assert tape.gradient(y, v).numpy().tolist() == [[0, 0], [0, 0], [2, 2]]


def test_variable_batch_scatter_update_updates_each_batch_row():
    v = ef.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    v.batch_scatter_update(ef.IndexedSlices(ef.constant([[9.0], [8.0]]), ef.constant([[2], [0]])))
    expected = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    expected[0, 2], expected[1, 0] = 9.0, 8.0
    np.testing.assert_array_equal(v.numpy(), expected)


def test_variable_scatter_methods_inside_a_function():
    v = ef.Variable([1.0, 2.0, 3.0])

    @ef.function
    def step(i):
        v.scatter_update(ef.IndexedSlices(ef.constant([9.0]), ef.reshape(i, [1])))
        v.scatter_add(ef.IndexedSlices(ef.constant([1.0, 1.0]), ef.constant([0, 0])))
        v.scatter_nd_sub([[2]], [1.0])
        v.scatter_max(ef.IndexedSlices(ef.constant([5.0]), ef.constant([0])))
        return v.read_value()

    def eager_step(values, i):
        values = values.copy()
        values[i] = 9.0
        values[0] += 2.0
        values[2] -= 1.0
        values[0] = max(values[0], 5.0)
        return values

    expected = eager_step(np.array([1.0, 2.0, 3.0]), 1)
    np.testing.assert_array_equal(step(ef.constant(1)).numpy(), expected)
    np.testing.assert_array_equal(v.numpy(), expected)
    expected = eager_step(expected, 2)
    np.testing.assert_array_equal(step(ef.constant(2)).numpy(), expected)
    assert step.experimental_get_tracing_count() == 1

    @ef.function
    def multiply():
        v.scatter_mul(ef.IndexedSlices(ef.constant([2.0]), ef.constant([0])))

    with pytest.raises(ef.errors.UnimplementedError, match="ResourceScatterMul"):
        multiply()


# -- tape -------------------------------------------------------------------------------------
def test_custom_gradient_inside_a_function():
    @ef.custom_gradient
    def scaled(x):
        def grad(dy):
            return dy * 7.0
        return x * 2.0, grad

    traced = ef.function(lambda x: scaled(x))
    x = ef.constant(3.0)
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = traced(x)
    assert float(y) == 6.0
    assert float(tape.gradient(y, x)) == 7.0

    v = ef.Variable(2.0)

    @ef.custom_gradient
    def with_var(x):
        def grad(dy, variables=None):
            return dy * v, [dy * 100.0 for _ in variables]
        return x * v, grad

    @ef.function
    def step(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = with_var(x)
        return tape.gradient(y, [x, v])

    gx, gv = step(ef.constant(3.0))
    assert float(gx) == 2.0 and float(gv) == 100.0


def test_recompute_grad_inside_a_function():
    v = ef.Variable(2.0)
    block = ef.recompute_grad(lambda a: ef.tanh(a * v))

    @ef.function
    def step(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = block(x)
        return tape.gradient(y, [x, v])

    gx, gv = step(ef.constant(0.5))
    d = 1 - np.tanh(1.0) ** 2
    np.testing.assert_allclose([float(gx), float(gv)], [2.0 * d, 0.5 * d], rtol=1e-6)


# -- @function and control flow ---------------------------------------------------------------
def test_input_signature_converts_python_values_each_call():
    @ef.function(input_signature=[ef.TensorSpec([], ef.float32)])
    def double(x):
        return x * 2.0

    assert float(double(3.0)) == 6.0
    assert float(double(4.0)) == 8.0  # not the first call's value baked into the graph
    assert float(double(4.0)) == 8.0
    assert float(double(ef.constant(5.0))) == 10.0
    assert double.experimental_get_tracing_count() == 1

    @ef.function(input_signature=[ef.TensorSpec([None], ef.float32)])
    def twice(x):
        return x * 2.0

    assert twice([1.0, 2.0]).numpy().tolist() == [2.0, 4.0]
    assert twice([1, 2, 3]).numpy().tolist() == [2.0, 4.0, 6.0]
    assert twice.experimental_get_tracing_count() == 1

    @ef.function(input_signature=[[ef.TensorSpec([], ef.float32),
                                   ef.TensorSpec([], ef.float32)]])
    def product(pair):
        return pair[0] * pair[1]

    assert float(product([3.0, 2.0])) == 6.0
    assert float(product([4.0, 1.0])) == 4.0
    assert float(product((ef.constant(1.0), 7.0))) == 7.0


def test_case_exclusive_checks_every_predicate_without_default():
    t, f = ef.constant(True), ef.constant(False)
    one, two = (lambda: ef.constant(1)), (lambda: ef.constant(2))
    with pytest.raises(ef.errors.InvalidArgumentError, match="exclusive"):
        ef.case([(t, one), (t, two)], exclusive=True)
    assert int(ef.case([(f, one), (t, two)], exclusive=True)) == 2

    traced = ef.function(lambda a, b: ef.case([(a, one), (b, two)], exclusive=True))
    assert int(traced(f, t)) == 2
    with pytest.raises(ef.errors.InvalidArgumentError, match="exclusive"):
        traced(t, t)


def test_structure_mismatch_between_dict_and_list_is_a_clear_error():
    with pytest.raises(ValueError, match="same nested structure"):
        nest.assert_same_structure({"a": 1}, [{"a": 1}], check_types=False)

    @ef.function
    def loop(x):
        return ef.while_loop(lambda d: d["i"] < 3,
                             lambda d: {"i": d["i"] + 1, "v": d["v"] * 2.0},
                             [{"i": ef.constant(0), "v": x}])

    with pytest.raises(ValueError, match="same nested structure"):
        loop(ef.constant(1.0))


def test_graph_as_graph_def():
    cf = ef.function(lambda x: x * 2.0 + 1.0).get_concrete_function(ef.TensorSpec([None]))
    # As TF's, as_graph_def() is a GraphDef: its nodes are listed (issue 17).
    graph_def = cf.graph.as_graph_def()
    assert [n.op for n in graph_def.node].count("Placeholder") == 1
    from eagerflow.function import serialize

    proto = serialize.graph_to_proto(cf.graph)
    assert len(proto.SerializeToString()) > 0
    loaded = serialize.load_function(proto)
    assert loaded(ef.constant([1.0, 2.0])).numpy().tolist() == [3.0, 5.0]


# -- print ------------------------------------------------------------------------------------
def _printed(*inputs, **kwargs):
    buf = io.StringIO()
    ef.print(*inputs, output_stream=buf, **kwargs)
    return buf.getvalue()


def test_print_formats_values_as_tf():
    # TF's layout: no column padding, bools as 1/0, shortest round-tripping %g floats.
    assert _printed(ef.constant([1, 10, 100])) == "[1 10 100]\n"
    assert _printed(ef.constant([[1.0, 10.5], [100.0, 2.0]])) == "[[1 10.5]\n [100 2]]\n"
    assert _printed(ef.constant([True, False]), ef.constant(True)) == "[1 0] 1\n"
    assert _printed(ef.constant([0.1, 1e-8])) == "[0.1 1e-08]\n"
    third = np.float32(1) / np.float32(3)
    assert _printed(ef.constant(third)) == "%.9g\n" % third
    assert _printed(ef.reshape(ef.range(8), [2, 2, 2])) == \
        "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]\n"
    assert _printed(ef.range(10)) == "[0 1 2 ... 7 8 9]\n"
    assert _printed(ef.range(10), summarize=None) == "[0 1 2 ... 7 8 9]\n"
    assert _printed(ef.range(10), summarize=1) == "[0 ... 9]\n"
    assert _printed(ef.range(5), summarize=-1) == "[0 1 2 3 4]\n"


def test_print_nested_structures_show_tensor_values():
    t = ef.range(10)
    assert _printed("tensors:", t, {2: t * 2}) == \
        "tensors: [0 1 2 ... 7 8 9] {2: [0 2 4 ... 14 16 18]}\n"
    assert _printed({"b": [ef.constant(2.5)], "a": "x"}, (1, ef.constant(3))) == \
        "{'a': 'x', 'b': [2.5]} (1, 3)\n"
    captured = io.StringIO()
    old = sys.stdout
    sys.stdout = captured
    try:
        traced = ef.function(
            lambda x: ef.print("in", {"x": x, "k": [x * 2]}, output_stream=sys.stdout))
        traced(ef.constant(3))
        traced(ef.constant(4))
    finally:
        sys.stdout = old
    assert captured.getvalue() == "in {'k': [6], 'x': 3}\nin {'k': [8], 'x': 4}\n"


def test_print_to_a_file_url(tmp_path):
    path = tmp_path / "out.txt"
    url = "file://" + str(path)
    ef.print("eager", ef.constant([1, 2]), output_stream=url)
    traced = ef.function(lambda x: ef.print("traced", x, output_stream=url))
    traced(ef.constant(3))
    traced(ef.constant(4))
    assert path.read_text() == "eager [1 2]\ntraced 3\ntraced 4\n"
