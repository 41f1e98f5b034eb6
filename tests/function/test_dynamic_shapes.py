"""Shape-like arguments computed from tensors inside ``@function``.

Two forms, as in TF: a value known when tracing (``tf.shape(x)[0]`` of a fully known x)
folds to ints, so the graph has static attrs and fully known output shapes; a value known
only at run time (a scalar argument, a dimension that is None in the input signature)
becomes a tensor input of the op's node, and the output's static shape is what TF infers
(the expected shapes below were read from TF 2.21's ``structured_outputs``).
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import serialize
from eagerflow.ops.static_value import DYNAMIC_ATTRS

# name -> (program of a scalar int tensor n, TF's static output shape with n unknown)
DYNAMIC = {
    "fill_mod": (lambda n: ef.fill([n % 3 + 1], n), (None,)),
    "fill_shape_range": (lambda n: ef.fill(ef.shape(ef.range(n)), n), (None,)),
    "zeros": (lambda n: ef.zeros([n, 2]), (None, 2)),
    "ones_stack": (lambda n: ef.ones(ef.stack([n, 2])), (None, 2)),
    "reshape": (lambda n: ef.reshape(ef.range(n * 2), [n, -1]), (None, None)),
    "tile": (lambda n: ef.tile([[1, 2]], [n, 1]), (None, 2)),
    "broadcast_to": (lambda n: ef.broadcast_to(1.0, [n, 3]), (None, 3)),
    "slice": (lambda n: ef.slice(ef.range(10), [n], [2]), (2,)),
    "slice_to_end": (lambda n: ef.slice(ef.range(10), [n], [-1]), (None,)),
    "pad": (lambda n: ef.pad([1, 2], [[n, 0]]), (None,)),
    "one_hot": (lambda n: ef.one_hot([0, 1], n), (2, None)),
    "eye": (lambda n: ef.eye(n), (None, None)),
    "eye_rect": (lambda n: ef.eye(2, n), (2, None)),
    "sequence_mask": (lambda n: ef.sequence_mask([1, 2], n), (2, None)),
    "sequence_mask_default": (lambda n: ef.sequence_mask(ef.stack([1, n])), (2, None)),
    "range": (lambda n: ef.range(n), (None,)),
    "scatter_nd": (lambda n: ef.scatter_nd([[0]], [5], [n + 1]), (None,)),
    "strided_slice": (lambda n: ef.strided_slice(ef.range(10), [n], [n + 3]), (None,)),
    "getitem_bounds": (lambda n: ef.range(10)[n:n + 3], (None,)),
    "getitem_stop": (lambda n: ef.reshape(ef.range(12), [3, 4])[:, :n], (3, None)),
    "getitem_step": (lambda n: ef.range(10)[::n + 1], (None,)),
    "zeros_scalar_shape": (lambda n: ef.zeros(n), (None,)),
    "linspace": (lambda n: ef.linspace(0.0, 1.0, n + 1), (None,)),
    "top_k": (lambda n: ef.math.top_k([3, 1, 2, 5], n).values, (None,)),
    "segment_sum": (lambda n: ef.math.unsorted_segment_sum([1.0, 2.0, 3.0], [0, 1, 0], n + 2),
                    (None,)),
    "split_sizes": (lambda n: ef.split(ef.range(6), [n, 6 - n])[1], (None,)),
    "repeat": (lambda n: ef.repeat([1, 2], n), (None,)),
    "roll": (lambda n: ef.roll(ef.range(5), shift=n, axis=0), (5,)),
    "random_uniform": (lambda n: ef.shape(ef.random.uniform([n, 2])), (2,)),
}

# name -> (program of a [4, 3] float tensor x, TF's static shape for x of shape [None, 3])
FROM_SHAPE = {
    "zeros_b": (lambda x: ef.zeros([ef.shape(x)[0], 4]), (None, 4)),
    "reshape_b": (lambda x: ef.reshape(x, [ef.shape(x)[0], -1]), (None, None)),
    "fill_shape": (lambda x: ef.fill(ef.shape(x), 2.0), (None, 3)),
    "ones_concat": (lambda x: ef.ones(ef.concat([ef.shape(x), [2]], 0)), (None, 3, 2)),
    "tile_b": (lambda x: ef.tile(x, [ef.shape(x)[0], 1]), (None, 3)),
    "broadcast_b": (lambda x: ef.broadcast_to(x[:, :1], ef.shape(x)), (None, 3)),
    "slice_b": (lambda x: ef.slice(x, [0, 1], [ef.shape(x)[0], 2]), (None, 2)),
    "pad_b": (lambda x: ef.pad(x, [[0, ef.shape(x)[0]], [1, 1]]), (None, 5)),
    "one_hot_b": (lambda x: ef.one_hot(ef.cast(x[:, 0], ef.int32), ef.shape(x)[1]), (None, 3)),
    "eye_b": (lambda x: ef.eye(ef.shape(x)[0]), (None, None)),
    "sequence_mask_b": (lambda x: ef.sequence_mask(ef.cast(x[:, 0], ef.int32),
                                                   ef.shape(x)[1]), (None, 3)),
    "uniform_b": (lambda x: ef.shape(ef.random.uniform(ef.shape(x))), (2,)),
    "zeros_size": (lambda x: ef.zeros([ef.size(x)]), (None,)),
}

X = np.arange(12.0, dtype=np.float32).reshape(4, 3) % 3


def _static(concrete):
    return tuple(concrete.structured_outputs.shape.as_list())


def _dynamic_nodes(concrete):
    return [n for n in concrete.graph.nodes if DYNAMIC_ATTRS in n.attrs]


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_value_known_at_run_time_is_an_input(name):
    program, tf_shape = DYNAMIC[name]
    f = ef.function(program)
    for value in (3, 1, 0):
        n = ef.constant(value)
        np.testing.assert_array_equal(f(n).numpy(), program(n).numpy())
    concrete = f.get_concrete_function(ef.TensorSpec([], ef.int32))
    assert _static(concrete) == tf_shape
    assert _dynamic_nodes(concrete) or name.startswith(("range", "sequence_mask"))


@pytest.mark.parametrize("name", sorted(FROM_SHAPE))
def test_shape_of_known_input_folds_to_static_attrs(name):
    program, _ = FROM_SHAPE[name]
    f = ef.function(program)
    x = ef.constant(X)
    np.testing.assert_array_equal(f(x).numpy(), program(x).numpy())
    concrete = f.get_concrete_function(x)
    assert None not in _static(concrete)
    assert _static(concrete) == tuple(program(x).shape.as_list())
    # Folded: no node takes a shape at run time, and no Pack builds one.
    assert not _dynamic_nodes(concrete), _dynamic_nodes(concrete)
    assert not [n for n in concrete.graph.nodes if n.op == "Pack"]


@pytest.mark.parametrize("name", sorted(FROM_SHAPE))
def test_unknown_batch_size_gives_tf_static_shape(name):
    program, tf_shape = FROM_SHAPE[name]
    f = ef.function(program, input_signature=[ef.TensorSpec([None, 3], ef.float32)])
    assert _static(f.get_concrete_function()) == tf_shape
    for rows in (4, 1):
        x = ef.constant(X[:rows])
        np.testing.assert_array_equal(f(x).numpy(), program(x).numpy())


def test_folding_leaves_no_runtime_nodes_for_the_batch_size():
    @ef.function
    def f(x):
        b = ef.shape(x)[0]
        return ef.zeros([b, 4]), ef.reshape(x, [b, -1])

    concrete = f.get_concrete_function(ef.constant(X))
    ops = [n.op for n in concrete.optimized_graph.nodes] if hasattr(
        concrete, "optimized_graph") else None
    zeros = [n for n in concrete.graph.nodes if n.op == "Zeros"]
    assert zeros and zeros[0].attrs["shape"] == (4, 4) and not zeros[0].inputs
    reshape = [n for n in concrete.graph.nodes if n.op == "Reshape"]
    assert reshape[0].attrs["shape"] == (4, -1) and len(reshape[0].inputs) == 1
    assert ops is None or "Shape" not in ops


def _fd_check(f, x, n, eps=1e-6):
    """The float64 gradient of sum(f(x, n) * w) against central finite differences."""
    rng = np.random.default_rng(0)
    out = f(ef.constant(x), n)
    w = rng.standard_normal(out.shape.as_list())

    def loss(v):
        return float(np.sum(f(ef.constant(v), n).numpy() * w))

    @ef.function
    def grad(v, n):
        with ef.GradientTape() as tape:
            tape.watch(v)
            s = ef.reduce_sum(f(v, n) * ef.constant(w))
        return tape.gradient(s, v)

    got = grad(ef.constant(x), n).numpy()
    expected = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        expected[i] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    return grad


GRADIENT_PROGRAMS = {
    "reshape": lambda x, n: ef.reshape(x, [n, -1]),
    "tile": lambda x, n: ef.tile(x, [n, 1]),
    "tile_both": lambda x, n: ef.tile(x, [n, n + 1]),
    "broadcast_to": lambda x, n: ef.broadcast_to(x, [n, 2, 3]),
    "slice": lambda x, n: ef.slice(x, [n - 1, n - 2], [1, 2]),
    "slice_to_end": lambda x, n: ef.slice(x, [0, n - 1], [-1, -1]),
    "pad": lambda x, n: ef.pad(x, [[n, 0], [1, n]]),
    "pad_reflect": lambda x, n: ef.pad(x, [[0, n - 1], [n, 0]], mode="REFLECT"),
    "fill_value": lambda x, n: ef.fill([n, 2], ef.reduce_sum(x)),
    "strided_slice": lambda x, n: ef.strided_slice(x, [0, n - 2], [2, n + 1]),
    "getitem": lambda x, n: x[n - 2:, :n],
    "split": lambda x, n: ef.split(x, [n - 1, 4 - n], axis=1)[1],
    "repeat": lambda x, n: ef.repeat(x, n, axis=1),
    "top_k": lambda x, n: ef.math.top_k(x, n).values,
    "segment_sum": lambda x, n: ef.math.unsorted_segment_sum(x, [1, 0], n + 1),
    "linspace": lambda x, n: ef.linspace(x[0], x[1], n + 2),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_PROGRAMS))
def test_gradients_through_dynamic_shapes_match_finite_differences(name):
    x = np.random.default_rng(1).standard_normal((2, 3))
    grad = _fd_check(GRADIENT_PROGRAMS[name], x, ef.constant(2))
    concrete = grad.get_concrete_function(ef.TensorSpec([2, 3], ef.float64),
                                          ef.TensorSpec([], ef.int32))
    assert _dynamic_nodes(concrete)


def test_gradient_with_unknown_batch_size():
    @ef.function(input_signature=[ef.TensorSpec([None, 3], ef.float64)])
    def grad(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            b = ef.shape(x)[0]
            y = ef.reshape(ef.tile(x, [1, b]), [b, -1, 3])
            s = ef.reduce_sum(ef.pad(y, [[0, b], [1, 0], [0, 0]]) ** 2)
        return tape.gradient(s, x)

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(grad(ef.constant(x)).numpy(), 2 * x * 2)


def test_protobuf_round_trip_runs_the_dynamic_nodes():
    def program(n, x):
        return {"fill": ef.fill([n % 3 + 1], n), "reshape": ef.reshape(ef.range(n * 2), [n, -1]),
                "tile": ef.tile(x, [n, 1]), "pad": ef.pad(x, [[n, 0], [0, 1]]),
                "slice": ef.slice(ef.range(10), [n], [2]), "hot": ef.one_hot([0, 1], n),
                "eye": ef.eye(n), "bcast": ef.broadcast_to(1.0, [n, 3])}

    concrete = ef.function(program).get_concrete_function(
        ef.TensorSpec([], ef.int32), ef.TensorSpec([None, 2], ef.float32))
    loaded = serialize.load_function(serialize.serialize_concrete_function(concrete))
    assert [n.attrs.get(DYNAMIC_ATTRS) for n in loaded.graph.nodes if DYNAMIC_ATTRS in n.attrs]
    x = ef.constant([[1.0, 2.0]])
    for value in (1, 3):
        n = ef.constant(value)
        got = loaded(n, x)
        expected = program(n, x)
        for key in expected:
            np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), key)


def test_saved_model_round_trip(tmp_path):
    class M(ef.Module):
        @ef.function(input_signature=[ef.TensorSpec([None, 3], ef.float32),
                                      ef.TensorSpec([], ef.int32)])
        def __call__(self, x, n):
            b = ef.shape(x)[0]
            return {"state": ef.zeros([b, n]), "tiled": ef.tile(x, [n, 1]),
                    "flat": ef.reshape(x, [b, -1]), "mask": ef.sequence_mask([1, 2], n)}

    m = M()
    ef.saved_model.save(m, str(tmp_path / "m"))
    loaded = ef.saved_model.load(str(tmp_path / "m"))
    x = ef.constant(X[:2])
    for value in (2, 4):
        n = ef.constant(value)
        got, expected = loaded(x, n), m(x, n)
        for key in expected:
            np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), key)


def test_dataset_map_gives_ragged_elements_and_padded_batch_works():
    ds = ef.data.Dataset.range(5).map(lambda x: ef.fill([x % 3 + 1], x))
    assert ds.element_spec.shape.as_list() == [None]
    assert [e.numpy().tolist() for e in ds] == [[0], [1, 1], [2, 2, 2], [3], [4, 4]]
    batches = [b.numpy().tolist() for b in ds.padded_batch(2)]
    assert batches == [[[0, 0], [1, 1]], [[2, 2, 2], [3, 0, 0]], [[4, 4]]]


def test_fused_elementwise_region_over_unknown_dims():
    @ef.function
    def f(n, x):
        z = ef.zeros([n, 3]) + x
        return ef.tanh(z * 2.0 + 1.0) - z

    x = ef.constant([0.5, -1.0, 2.0])
    for value in (1, 4):
        n = ef.constant(value)
        expected = np.tanh(np.broadcast_to(x.numpy(), (value, 3)) * 2 + 1) - x.numpy()
        np.testing.assert_allclose(f(n, x).numpy(), expected, rtol=1e-6)


def test_bad_values_at_run_time_name_the_op():
    @ef.function
    def zeros(n):
        return ef.zeros([n, 2])

    with pytest.raises(errors.InvalidArgumentError, match="negative dimension.*node zeros"):
        zeros(ef.constant(-1))

    @ef.function
    def reshape(n):
        return ef.reshape(ef.range(6), [n, -1])

    with pytest.raises(errors.InvalidArgumentError, match="cannot reshape"):
        reshape(ef.constant(4))

    @ef.function
    def tile(n):
        return ef.tile([1, 2], [n])

    with pytest.raises(errors.InvalidArgumentError, match="non-negative"):
        tile(ef.constant(-2))

    @ef.function
    def eye(n):
        return ef.eye(n)

    with pytest.raises(errors.InvalidArgumentError, match="negative"):
        eye(ef.constant(-1))


def test_axes_must_be_known_when_tracing():
    # TF gives a result of unknown rank; axes and permutations are static here.
    @ef.function
    def concat(n):
        return ef.concat([ef.ones([2]), ef.ones([2])], axis=n)

    with pytest.raises(errors.InvalidArgumentError, match="axis must be known when tracing"):
        concat(ef.constant(0))

    @ef.function
    def transpose(n):
        return ef.transpose(ef.ones([2, 3]), ef.stack([n, 0]))

    with pytest.raises(errors.InvalidArgumentError, match="perm must be known when tracing"):
        transpose(ef.constant(1))


def test_bad_values_at_trace_time_are_refused_clearly():
    @ef.function
    def float_shape(x):
        return ef.fill([x, 2], 1.0)

    with pytest.raises(errors.InvalidArgumentError, match="fill: dims must be"):
        float_shape(ef.constant(2.0))

    @ef.function
    def negative(n):
        return ef.zeros([n, -3])

    with pytest.raises(errors.InvalidArgumentError, match="negative dimension"):
        negative(ef.constant(2))


def test_eager_results_are_unchanged():
    n = ef.constant(3)
    assert ef.zeros([n, 2]).shape.as_list() == [3, 2]
    assert ef.fill(ef.stack([n, 1]), 1).shape.as_list() == [3, 1]
    assert ef.reshape(ef.range(6), [n, -1]).numpy().tolist() == [[0, 1], [2, 3], [4, 5]]


def test_traced_scalars_in_a_list_are_packed_as_tf_does():
    @ef.function
    def grow(n):
        acc = ef.zeros([0], ef.int32)
        for i in ef.range(n):
            ef.autograph.experimental.set_loop_options(
                shape_invariants=[(acc, ef.TensorShape([None]))])
            acc = ef.concat([acc, [i * 2]], 0)
        return acc

    assert grow(ef.constant(4)).numpy().tolist() == [0, 2, 4, 6]
    assert _static(grow.get_concrete_function(ef.constant(4))) == (None,)


def test_slice_past_the_end_at_run_time_is_refused():
    @ef.function
    def f(n):
        return ef.slice(ef.range(10), [n], [2])

    assert f(ef.constant(8)).numpy().tolist() == [8, 9]
    with pytest.raises(errors.InvalidArgumentError):
        f(ef.constant(9))


def test_random_ops_with_run_time_shapes_draw_what_eager_draws():
    traced_gen, eager_gen = ef.random.Generator.from_seed(7), ef.random.Generator.from_seed(7)

    @ef.function
    def draw(n):
        return (traced_gen.uniform([n, 2]), traced_gen.normal([n]),
                ef.random.stateless_uniform([n], seed=[1, 2]))

    for value in (3, 2):
        got = draw(ef.constant(value))
        expected = (eager_gen.uniform([value, 2]), eager_gen.normal([value]),
                    ef.random.stateless_uniform([value], seed=[1, 2]))
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    shapes = [tuple(t.shape.as_list()) for t in
              draw.get_concrete_function(ef.TensorSpec([], ef.int32)).structured_outputs]
    assert shapes == [(None, 2), (None,), (None,)]


def test_optimizer_passes_keep_the_run_time_shape_inputs():
    # Reshape of a reshape collapses to one node; a sum of index gradients becomes a stack
    # only for static indices.
    @ef.function
    def f(x, n):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.strided_slice(x, [n], [n + 1], shrink_axis_mask=1) + \
                ef.strided_slice(x, [n - 1], [n], shrink_axis_mask=1) * 3.0 + x[0]
            s = ef.reduce_sum(y * y)
        flat = ef.reshape(ef.reshape(x, [-1]) * 2.0, [n, -1])
        return tape.gradient(s, x), flat, ef.reshape(ef.reshape(x, [n, -1]), [-1, n])

    x = np.arange(6.0).reshape(3, 2)
    grad, flat, twice = f(ef.constant(x), ef.constant(1))
    y = x[1] + 4 * x[0]
    np.testing.assert_allclose(grad.numpy(), [2 * y * 4, 2 * y, [0, 0]])
    np.testing.assert_array_equal(flat.numpy(), (x * 2).reshape(1, -1))
    np.testing.assert_array_equal(twice.numpy(), x.reshape(-1, 1))


def test_second_order_gradient_through_a_function_with_run_time_shapes():
    def program(x, n):
        tiled = ef.tile(x, [n, 1])
        weights = ef.reshape(ef.range(ef.cast(n * 6, ef.float64), dtype=ef.float64), [n * 2, -1])
        return ef.reduce_sum(tiled ** 3 * weights)

    x, n = ef.constant(np.random.default_rng(2).random((2, 3))), ef.constant(2)
    results = []
    for fn in (ef.function(program), program):
        with ef.GradientTape() as outer:
            outer.watch(x)
            with ef.GradientTape() as inner:
                inner.watch(x)
                s = fn(x, n)
            g = inner.gradient(s, x)
        results.append(outer.gradient(g, x).numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


@pytest.mark.parametrize("names", [("shape", "shape"), ("dtype", "shape", "x"), ("missing",),
                                   "shape"])
def test_loading_refuses_inconsistent_run_time_attrs(names):
    concrete = ef.function(lambda n: ef.zeros([n, 2])).get_concrete_function(
        ef.TensorSpec([], ef.int32))
    msg = serialize.graph_to_proto(concrete)
    node = next(n for n in msg.graph.node if n.op == "Zeros")
    node.attr[DYNAMIC_ATTRS].CopyFrom(serialize.attr_to_proto(names))
    with pytest.raises(errors.OpError, match="run-time attributes"):
        serialize.load_function(serialize.proto_to_bytes(msg))
