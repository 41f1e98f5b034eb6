"""Gradients through an unselected `where` branch, against values recorded with TF 2.21."""

import numpy as np
import pytest

import eagerflow as ef

NAN = float("nan")
# tape.gradient(where(x > 0, f(x), 0.), x) at x = [-1, 0, 4], recorded with TensorFlow 2.21.
TF_RECORDED = {
    "sqrt": (ef.sqrt, [0.0, 0.0, 0.25]),
    "rsqrt": (ef.math.rsqrt, [0.0, 0.0, -0.0625]),
    "reciprocal": (ef.math.reciprocal, [0.0, 0.0, -0.0625]),
    "log": (ef.math.log, [-0.0, NAN, 0.25]),
    "pow 0.5": (lambda v: v ** 0.5, [NAN, NAN, 0.25]),
    "log1p": (ef.math.log1p, [NAN, 0.0, 0.2]),
    "acos": (ef.math.acos, [NAN, -0.0, NAN]),
    "xlogy": (lambda v: ef.math.xlogy(v, v), [NAN, 0.0, 2.3862944]),
    "divide_no_nan": (lambda v: ef.math.divide_no_nan(1.0, v), [-0.0, 0.0, -0.0625]),
    "atanh": (ef.math.atanh, [NAN, 0.0, -0.06666667]),
}


@pytest.mark.parametrize("name", sorted(TF_RECORDED))
@pytest.mark.parametrize("traced", [False, True])
def test_where_gradient_matches_tf(name, traced):
    fn, expected = TF_RECORDED[name]

    def grad(x):
        with ef.GradientTape() as tape:
            tape.watch(x)
            y = ef.where(x > 0, fn(x), 0.0)
        return tape.gradient(y, x)

    if traced:
        grad = ef.function(grad)
    got = grad(ef.constant([-1.0, 0.0, 4.0])).numpy()
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=1e-6)


def test_sqrt_gradient_still_exact_where_selected():
    x = ef.constant(np.array([0.25, 1.0, 9.0]))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(ef.sqrt(x) + ef.math.rsqrt(x) + ef.math.reciprocal(x))
    x_np = x.numpy()
    expected = 0.5 / np.sqrt(x_np) - 0.5 * x_np ** -1.5 - x_np ** -2.0
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected, rtol=1e-12)
