"""RaggedTensor-dense broadcasting against TensorFlow 2.21 (tf_reference/ragged_broadcast.json,
recorded by scripts/record_tf_reference.py ragged_broadcast on ragged_broadcast_cases.py):
values, static shapes and ragged ranks, refusals, gradients, eager and traced."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

from tests.ragged import ragged_broadcast_cases as cases

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tf_reference",
                       "ragged_broadcast.json")) as f:
    REF = json.load(f)


def _check(result, want, name):
    assert isinstance(result, ef.RaggedTensor), name
    assert result.to_list() == want["values"] or np.allclose(
        np.asarray(result.flat_values.numpy(), float).ravel(),
        np.asarray(ef.ragged.constant(want["values"]).flat_values.numpy(), float).ravel()), name
    assert result.shape.as_list() == want["shape"], (name, result.shape)
    assert result.ragged_rank == want["ragged_rank"], name
    assert result.dtype.name == want["dtype"], name


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_broadcast_matches_tensorflow(name):
    inputs, op = cases.CASES[name]
    _check(op(ef, *inputs(ef)), REF["cases"][name], name)


# Rows checked for equal lengths: possible eagerly, not in a trace (refused there).
_EAGER_ONLY = {"even_rows_matrix"}


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_traced_broadcast_matches_tensorflow(name):
    inputs, op = cases.CASES[name]
    x, y = inputs(ef)
    # The signature keeps the number of rows and leaves the values' count unknown.
    fn = ef.function(lambda a, b: op(ef, a, b),
                     input_signature=[ef.RaggedTensorSpec.from_value(x),
                                      ef.TensorSpec(y.shape, y.dtype)])
    if name in _EAGER_ONLY:
        with pytest.raises(errors.UnimplementedError, match="row lengths are unknown"):
            fn(x, y)
        return
    _check(fn(x, y), REF["cases"][name], name)


@pytest.mark.parametrize("name", sorted(cases.ERRORS))
def test_shapes_that_do_not_broadcast_are_refused_as_in_tensorflow(name):
    assert REF["errors"][name] == "InvalidArgumentError"
    inputs, op = cases.ERRORS[name]
    with pytest.raises(errors.InvalidArgumentError, match="RaggedTensor"):
        op(ef, *inputs(ef))


@pytest.mark.parametrize("name", cases.GRADS)
@pytest.mark.parametrize("traced", [False, True])
def test_gradients_reach_both_operands_as_in_tensorflow(name, traced):
    inputs, op = cases.CASES[name]
    x, y = inputs(ef)
    flat = ef.Variable(x.flat_values)
    dense = ef.Variable(y)

    def loss(f, d):
        r = op(ef, x.with_flat_values(f), d)
        w = ef.reshape(ef.range(ef.size(r.flat_values), dtype=ef.float32),
                       ef.shape(r.flat_values)) + 1.0
        return ef.reduce_sum(r.flat_values * w)

    if traced:
        loss = ef.function(loss, input_signature=[ef.TensorSpec(flat.shape, ef.float32),
                                                  ef.TensorSpec(y.shape, ef.float32)])
    with ef.GradientTape() as tape:
        value = loss(flat * 1.0, dense * 1.0)
    gf, gd = tape.gradient(value, [flat, dense])
    np.testing.assert_allclose(gf.numpy(), REF["grads"][name]["flat_values"], rtol=1e-6)
    np.testing.assert_allclose(gd.numpy(), REF["grads"][name]["dense"], rtol=1e-6)


def test_float64_gradient_against_finite_differences():
    x = ef.ragged.constant([[0.5, -1.0], [2.0]], dtype=ef.float64)
    rng = np.random.default_rng(3)
    y0 = rng.normal(size=(3, 2, 1))
    w = rng.normal(size=(3, 3))

    def f(flat, y):
        r = ef.multiply(x.with_flat_values(flat), y)
        return ef.reduce_sum(ef.exp(r.flat_values) * ef.reshape(ef.constant(w), [-1]))

    flat0 = x.flat_values.numpy()
    fv, yv = ef.Variable(flat0), ef.Variable(y0)
    with ef.GradientTape() as tape:
        value = f(fv * 1.0, yv * 1.0)
    gf, gy = tape.gradient(value, [fv, yv])
    eps = 1e-6
    for arr, grad, other in ((flat0, gf.numpy(), "flat"), (y0, gy.numpy(), "y")):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[i] += eps
            lo[i] -= eps
            args = (lambda a: (a, y0)) if other == "flat" else (lambda a: (flat0, a))
            num[i] = (f(*map(ef.constant, args(hi))).numpy() -
                      f(*map(ef.constant, args(lo))).numpy()) / (2 * eps)
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-8)


def test_even_rows_against_a_vector_broadcast_as_numpy():
    # TF 2.21 fails inside (an internal partition check) for rows of equal length against
    # a vector of that length; the shapes broadcast, so this gives numpy's answer.
    rt = ef.ragged.constant([[1.0, 2.0], [3.0, 4.0]])
    out = rt + ef.constant([10.0, 20.0])
    assert out.to_list() == [[11.0, 22.0], [13.0, 24.0]]


def test_operators_and_public_ops_are_one_path():
    rt = ef.ragged.constant([[1.0, 2.0], [3.0]])
    y = ef.constant([[[1.0]], [[2.0]], [[3.0]]])
    assert (rt + y).to_list() == ef.add(rt, y).to_list()
    assert (y - rt).to_list() == ef.subtract(y, rt).to_list()
    assert (rt * 2.0).to_list() == [[2.0, 4.0], [6.0]]
    assert (1.0 - rt).to_list() == [[0.0, -1.0], [-2.0]]


def test_a_trace_refuses_what_it_cannot_check():
    f = ef.function(lambda a, b: a + b,
                    input_signature=[ef.RaggedTensorSpec([2, None], ef.float32),
                                     ef.TensorSpec([2], ef.float32)])
    with pytest.raises(errors.UnimplementedError, match="row lengths are unknown"):
        f(ef.ragged.constant([[1.0, 2.0], [3.0, 4.0]]), ef.constant([1.0, 2.0]))
    g = ef.function(lambda a, b: a + b,
                    input_signature=[ef.RaggedTensorSpec([None, None], ef.float32),
                                     ef.TensorSpec([2, 1], ef.float32)])
    with pytest.raises(errors.UnimplementedError, match="number of rows"):
        g(ef.ragged.constant([[1.0, 2.0], [3.0]]), ef.ones([2, 1]))
    # New leading dimensions need no row count: [None, None] + [3, 1, 1] is [3, None, None].
    h = ef.function(lambda a, b: a + b,
                    input_signature=[ef.RaggedTensorSpec([None, None], ef.float32),
                                     ef.TensorSpec([3, 1, 1], ef.float32)])
    rt = ef.ragged.constant([[1.0, 2.0], [3.0]])
    y = ef.constant([[[1.0]], [[2.0]], [[3.0]]])
    assert h(rt, y).to_list() == (rt + y).to_list()
