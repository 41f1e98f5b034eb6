"""TensorArray, map_fn, scan, foldl, foldr, vectorized_map: eager, traced, gradients."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

F64 = ef.float64


def _fd_check(loss, x0, seed=0):
    """Random-direction finite-difference check of d loss / dx in float64."""
    x = ef.constant(x0, dtype=F64)
    with ef.GradientTape() as tape:
        tape.watch(x)
        value = loss(x)
    grad = tape.gradient(value, x).numpy()
    direction = np.random.default_rng(seed).standard_normal(x0.shape)
    eps = 1e-6
    plus = float(loss(ef.constant(x0 + eps * direction, dtype=F64)))
    minus = float(loss(ef.constant(x0 - eps * direction, dtype=F64)))
    np.testing.assert_allclose(np.sum(grad * direction), (plus - minus) / (2 * eps),
                               rtol=1e-6, atol=1e-9)


# -- TensorArray ----------------------------------------------------------------------------
def _ta_program(x):
    ta = ef.TensorArray(ef.float32, size=0, dynamic_size=True)
    for i in range(3):
        ta = ta.write(i, x * float(i))
    ta = ta.scatter([3, 4], ef.stack([x, -x]))
    return ta.stack(), ta.read(1), ta.gather([0, 4]), ta.concat(), ta.size()


def test_tensor_array_eager_and_traced_agree():
    x = ef.constant([1.0, 2.0])
    eager = _ta_program(x)
    traced = ef.function(_ta_program)(x)
    xs = np.array([1.0, 2.0])
    want = [np.stack([xs * 0, xs, xs * 2, xs, -xs]), xs, np.stack([xs * 0, -xs]),
            np.concatenate([xs * 0, xs, xs * 2, xs, -xs]), 5]
    for got_e, got_t, w in zip(eager, traced, want):
        np.testing.assert_allclose(got_e.numpy(), w)
        np.testing.assert_allclose(got_t.numpy(), w)


def test_tensor_array_unstack_and_fixed_size_errors():
    ta = ef.TensorArray(ef.int32, size=3).unstack(ef.constant([[1, 2], [3, 4], [5, 6]]))
    assert ta.read(2).numpy().tolist() == [5, 6]
    assert int(ta.size()) == 3
    with pytest.raises(errors.InvalidArgumentError, match="dynamic_size=True"):
        ef.TensorArray(ef.float32, size=2).write(2, 1.0)
    with pytest.raises(ValueError, match="same shape"):
        ef.TensorArray(ef.float32, size=2, element_shape=[2]).write(0, [1.0, 2.0, 3.0])


def test_tensor_array_in_a_traced_while_loop_with_dynamic_size():
    @ef.function
    def squares(n):
        ta = ef.TensorArray(ef.int32, size=0, dynamic_size=True)
        for i in ef.range(n):
            ta = ta.write(i, i * i)
        return ta.stack()

    assert squares(ef.constant(5)).numpy().tolist() == [0, 1, 4, 9, 16]
    assert squares(ef.constant(0)).numpy().tolist() == []

    @ef.function
    def explicit(n):
        ta = ef.TensorArray(ef.float32, size=n)
        _, ta = ef.while_loop(lambda i, ta: i < n,
                              lambda i, ta: (i + 1, ta.write(i, ef.fill([2], 1.0))),
                              (ef.constant(0), ta))
        return ta.stack()

    assert explicit(ef.constant(3)).numpy().tolist() == [[1.0, 1.0]] * 3


def _ta_loss(x):
    ta = ef.TensorArray(F64, size=3)
    y = x
    for i in ef.range(3):
        y = ef.sin(y) * x
        ta = ta.write(i, y)
    return ef.reduce_sum(ta.stack() ** 2)


def test_tensor_array_gradient_through_a_traced_loop():
    _fd_check(ef.function(_ta_loss), np.array([1.0, 2.0, -0.5]))
    _fd_check(_ta_loss, np.array([1.0, 2.0, -0.5]))  # eagerly too


# -- TensorArrays of elements of different sizes ----------------------------------------------
def _ragged_program(x):
    # Element i holds the first i + 1 entries of x times (i + 1): sizes 1, 2, 3, 4.
    ta = ef.TensorArray(x.dtype, size=0, dynamic_size=True, infer_shape=False)
    for i in ef.range(4):
        ta = ta.write(i, ef.gather(x, ef.range(i + 1)) * ef.cast(i + 1, x.dtype))
    return ta.concat(), ta.read(2), ta.size()


def _ragged_want(x):
    pieces = [x[:i + 1] * (i + 1) for i in range(4)]
    return np.concatenate(pieces), pieces[2], 4


def test_tensor_array_of_different_sizes_eager():
    ta = ef.TensorArray(ef.float32, size=0, dynamic_size=True, infer_shape=False)
    ta = ta.write(0, [1.0])
    ta = ta.write(1, [2.0, 3.0])
    assert ta.concat().numpy().tolist() == [1.0, 2.0, 3.0]
    assert ta.read(0).numpy().tolist() == [1.0]
    assert ta.read(1).numpy().tolist() == [2.0, 3.0]
    assert int(ta.size()) == 2
    assert ta.element_shape.rank is None  # as TF: infer_shape=False learns nothing
    with pytest.raises(errors.InvalidArgumentError, match="Shapes of all inputs must match"):
        ta.stack()
    # A shorter element written over a longer one, and a longer one after the shorter.
    ta = ta.write(1, [7.0]).write(2, [4.0, 5.0, 6.0])
    assert ta.concat().numpy().tolist() == [1.0, 7.0, 4.0, 5.0, 6.0]
    assert ta.gather([0, 1]).numpy().tolist() == [[1.0], [7.0]]
    # Elements of rank 2 differing in their first dimension.
    ta2 = ef.TensorArray(ef.int32, size=2, element_shape=[None, 2], infer_shape=False)
    ta2 = ta2.write(0, [[1, 2]]).write(1, [[3, 4], [5, 6], [7, 8]])
    np.testing.assert_array_equal(ta2.concat().numpy(), [[1, 2], [3, 4], [5, 6], [7, 8]])
    with pytest.raises(errors.InvalidArgumentError, match="Dimensions after the first"):
        ef.TensorArray(ef.int32, size=2, infer_shape=False).write(0, [[1, 2]]).write(
            1, [[1, 2, 3]]).concat()
    # infer_shape=True (the default) refuses a second size, as TF does eagerly.
    with pytest.raises(ValueError, match="infer_shape=False"):
        ef.TensorArray(ef.float32, size=2, element_shape=[None]).write(0, [1.0]).write(
            1, [1.0, 2.0])


def test_tensor_array_split_matches_numpy():
    value = np.arange(12.0).reshape(6, 2)
    ta = ef.TensorArray(ef.float64, size=4).split(ef.constant(value), [1, 3, 0, 2])
    assert int(ta.size()) == 4
    for k, (a, b) in enumerate([(0, 1), (1, 4), (4, 4), (4, 6)]):
        np.testing.assert_array_equal(ta.read(k).numpy(), value[a:b])
    np.testing.assert_array_equal(ta.concat().numpy(), value)
    assert ta.element_shape.as_list() == [None, 2]
    with pytest.raises(errors.InvalidArgumentError, match="Shapes of all inputs"):
        ta.stack()
    even = ef.TensorArray(ef.float64, size=2).split(ef.constant(value), [3, 3])
    np.testing.assert_array_equal(even.stack().numpy(), value.reshape(2, 3, 2))
    with pytest.raises(errors.InvalidArgumentError, match="sum of lengths"):
        ef.TensorArray(ef.float64, size=2).split(ef.constant(value), [1, 2])


def test_tensor_array_of_different_sizes_traced_equals_eager():
    x = np.array([0.3, -0.5, 0.7, 1.1])
    want = _ragged_want(x)
    fn = ef.function(_ragged_program)
    for got in (_ragged_program(ef.constant(x)), fn(ef.constant(x))):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w)
    # A traced array of a size known only at run time, with element_shape [None].
    @ef.function
    def lengths(n):
        ta = ef.TensorArray(ef.int32, size=n, element_shape=[None])
        for i in ef.range(n):
            ta = ta.write(i, ef.range(i))
        return ta.concat()

    assert lengths(ef.constant(4)).numpy().tolist() == [0, 0, 1, 0, 1, 2]
    assert lengths(ef.constant(0)).numpy().tolist() == []


def _ragged_loss(x):
    concat, third, _ = _ragged_program(x)
    split = ef.TensorArray(x.dtype, size=2).split(concat[:4] * 2.0, [1, 3])
    return (ef.reduce_sum(ef.sin(concat)) + ef.reduce_sum(third ** 2)
            + ef.reduce_sum(split.read(1) ** 3) + ef.reduce_sum(split.concat()))


def test_tensor_array_of_different_sizes_gradients():
    x0 = np.array([0.3, -0.5, 0.7, 1.1])
    _fd_check(_ragged_loss, x0)
    _fd_check(ef.function(_ragged_loss), x0)
    x = ef.constant(x0, F64)
    grads = []
    for fn in (_ragged_loss, ef.function(_ragged_loss)):
        with ef.GradientTape() as tape:
            tape.watch(x)
            value = fn(x)
        grads.append(tape.gradient(value, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_tensor_array_of_different_sizes_round_trips():
    from eagerflow.function import serialize

    cf = ef.function(_ragged_program).get_concrete_function(ef.TensorSpec([4], F64))
    loaded = serialize.load_function(serialize.proto_to_bytes(serialize.graph_to_proto(cf)))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    for g, w in zip(loaded(ef.constant(x)), _ragged_want(x)):
        np.testing.assert_allclose(g.numpy(), w)


def test_tensor_array_of_different_sizes_through_cond_and_autograph():
    @ef.function
    def branches(n):
        ta = ef.TensorArray(ef.float32, size=0, dynamic_size=True, infer_shape=False)
        ta = ta.write(0, [1.0])
        if n > 0:
            ta = ta.write(1, [2.0, 3.0])
        else:
            ta = ta.write(1, [4.0])
        return ta.concat()

    assert branches(ef.constant(1)).numpy().tolist() == [1.0, 2.0, 3.0]
    assert branches(ef.constant(0)).numpy().tolist() == [1.0, 4.0]

    def mixed(n):
        # A list holding a traced scalar is packed into a tensor, as TF does.
        ta = ef.TensorArray(ef.int32, size=0, dynamic_size=True, infer_shape=False)
        for i in ef.range(n):
            if i % 2 == 0:
                ta = ta.write(i, ef.fill([i + 1], i))
            else:
                ta = ta.write(i, [i])
        return ta.concat()

    want = [0, 1, 2, 2, 2, 3, 4, 4, 4, 4, 4]
    assert ef.function(mixed)(ef.constant(5)).numpy().tolist() == want
    assert mixed(ef.constant(5)).numpy().tolist() == want


def test_tensor_array_of_strings():
    ta = ef.TensorArray(ef.string, size=0, dynamic_size=True).write(0, "a").write(2, "c")
    assert ta.stack().numpy().tolist() == [b"a", b"", b"c"]  # TF's empty default
    assert ta.read(2).numpy() == b"c"
    ragged = ef.TensorArray(ef.string, size=2, infer_shape=False)
    assert ragged.write(0, ["a"]).write(1, ["b", "c"]).concat().numpy().tolist() == [
        b"a", b"b", b"c"]
    for fn in (ef.map_fn, ef.function(ef.map_fn)):
        got = fn(lambda v: ef.strings.as_string(v), ef.constant([1, 2]),
                 fn_output_signature=ef.string)
        assert got.numpy().tolist() == [b"1", b"2"]


@pytest.mark.parametrize("traced", [False, True])
def test_map_fn_with_a_ragged_output_signature(traced):
    def run(e):
        return ef.map_fn(lambda x: ef.range(x), e,
                         fn_output_signature=ef.RaggedTensorSpec(shape=[None], dtype=ef.int32))

    fn = ef.function(run) if traced else run
    got = fn(ef.constant([1, 3, 0, 2]))
    assert isinstance(got, ef.RaggedTensor)
    assert got.to_list() == [[0], [0, 1, 2], [], [0, 1]]


# -- map_fn / scan / folds ------------------------------------------------------------------
@pytest.mark.parametrize("traced", [False, True])
def test_map_fn_matches_numpy(traced):
    x = np.arange(12.0).reshape(4, 3)

    def run(t):
        return ef.map_fn(lambda r: ef.reduce_sum(r * r), t, fn_output_signature=F64)

    fn = ef.function(run) if traced else run
    np.testing.assert_allclose(fn(ef.constant(x, F64)).numpy(), (x * x).sum(1))
    nested = ef.map_fn(lambda p: (p[0] + p[1], p[0] * p[1]),
                       (ef.constant([1, 2]), ef.constant([3, 4])))
    assert [t.numpy().tolist() for t in nested] == [[4, 6], [3, 8]]


def test_map_fn_signature_errors():
    with pytest.raises(TypeError, match="fn_output_signature"):
        ef.map_fn(lambda r: ef.cast(r, ef.float32), ef.constant([1, 2]))


@pytest.mark.parametrize("traced", [False, True])
def test_scan_foldl_foldr_match_numpy(traced):
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def run(t):
        return (ef.scan(lambda a, v: a * v, t), ef.scan(lambda a, v: a + v, t, reverse=True),
                ef.scan(lambda a, v: a + v, t, initializer=ef.constant(10.0, F64)),
                ef.foldl(lambda a, v: a - v, t, initializer=ef.constant(0.0, F64)),
                ef.foldr(lambda a, v: a - v, t, initializer=ef.constant(0.0, F64)),
                ef.foldl(lambda a, v: a * v, t))

    fn = ef.function(run) if traced else run
    got = [r.numpy() for r in fn(ef.constant(x, F64))]
    want = [np.cumprod(x), np.cumsum(x[::-1])[::-1], 10 + np.cumsum(x), -x.sum(), -x.sum(),
            np.prod(x)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_scan_and_map_fn_gradients_match_finite_differences():
    x0 = np.array([[0.5, 1.5], [2.0, -1.0], [0.3, 0.7]])
    _fd_check(ef.function(lambda t: ef.reduce_sum(ef.scan(lambda a, v: a * v + ef.sin(a),
                                                          t))), x0)
    _fd_check(ef.function(lambda t: ef.reduce_sum(ef.map_fn(
        lambda r: ef.tanh(r) * r, t))), x0)
    _fd_check(lambda t: ef.foldr(lambda a, v: a * ef.cos(v), t), x0[:, 0])


def test_vectorized_map():
    x = ef.constant([[1, 5], [7, 2]])
    assert ef.vectorized_map(lambda r: ef.reduce_max(r), x).numpy().tolist() == [5, 7]
    traced = ef.function(lambda t: ef.vectorized_map(lambda r: ef.cast(r, ef.float32) * 2.0,
                                                     t))
    assert traced(x).numpy().tolist() == [[2.0, 10.0], [14.0, 4.0]]
