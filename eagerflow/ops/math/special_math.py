"""Special functions: erf, erfc, erfinv, lgamma, digamma and polygamma.

Kernels call scipy.special (cupyx.scipy.special on a GPU), computing 16-bit floats in
float32 since scipy has no 16-bit loops. Each gradient is the next function of the chain
(lgamma -> digamma -> polygamma), written as an op so it can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import FLOAT, broadcast_shapes, public_unary, unary
from eagerflow.ops.math import _scipy_special
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.math.unary_math import exp, square
from eagerflow.ops.family import GPU_FLOAT

__all__ = ["digamma", "erf", "erfc", "erfinv", "lgamma", "polygamma"]

EXPORTS = {
    "": ["erfinv"],
    "math": ["digamma", "erf", "erfc", "erfinv", "lgamma", "polygamma"],
}


_SQRT_PI = math.sqrt(math.pi)


def _special_kernel(fname):
    """A kernel calling ``xp.special.<fname>``, in float32 for 16-bit inputs.

    scipy has no half-precision loops (and none for bfloat16), so those compute in
    float32; the result is cast back to the input dtype.
    """

    def factory(xp):
        fn = getattr(xp.special, fname)

        def kernel(x):
            dt = x.dtype
            return fn(x.astype(xp.float32) if dt.itemsize < 4 else x).astype(dt, copy=False)

        return kernel

    return factory


# ------------------------------------------------------------------- special functions

ERF = unary("Erf", _special_kernel("erf"), dtypes=FLOAT,
            reference=lambda x: _scipy_special().erf(x),
            vjp=lambda g, x, out: g * (2 / _SQRT_PI) * exp(-square(x)), saves=(0,),
            gpu_expr=(GPU_FLOAT, "erf({0})"))
ERFC = unary("Erfc", _special_kernel("erfc"), dtypes=FLOAT,
             reference=lambda x: _scipy_special().erfc(x),
             vjp=lambda g, x, out: g * (-2 / _SQRT_PI) * exp(-square(x)), saves=(0,),
             gpu_expr=(GPU_FLOAT, "erfc({0})"))
ERFINV = unary("Erfinv", _special_kernel("erfinv"), dtypes=FLOAT,
               reference=lambda x: _scipy_special().erfinv(x), domain=(-0.9, 0.9),
               vjp=lambda g, x, out: g * (_SQRT_PI / 2) * exp(square(out)), saves=("out",))
LGAMMA = unary("Lgamma", _special_kernel("gammaln"), dtypes=FLOAT,
               reference=lambda x: _scipy_special().gammaln(x), domain=(0.3, 4.0),
               vjp=lambda g, x, out: g * execute(DIGAMMA, (x,)), saves=(0,))
DIGAMMA = unary("Digamma", _special_kernel("digamma"), dtypes=FLOAT,
                reference=lambda x: _scipy_special().digamma(x), domain=(0.3, 4.0),
                vjp=lambda g, x, out: g * execute(POLYGAMMA, (1, x)), saves=(0,))


def _polygamma_samples(rng, dtype):
    out = []
    for sa, sx in (((), ()), ((4,), (4,)), ((3, 1), (1, 2)), ((0,), (0,))):
        a = rng.integers(0, 4, size=sa).astype(dtype.np_dtype)
        x = rng.uniform(0.5, 3.0, size=sx).astype(dtype.np_dtype)
        out.append(((a, x), {}))
    return out


def _polygamma_kernel(xp):
    def kernel(a, x):
        if a.dtype.kind not in "iuf":
            raise errors.InvalidArgumentError(
                None, None, "the order a must hold real numbers (non-negative integers), got "
                "dtype %s" % a.dtype)
        dt = x.dtype
        work = xp.float32 if dt.itemsize < 4 else dt  # scipy has no 16-bit loops
        return xp.special.polygamma(a.astype(work, copy=False), x.astype(work, copy=False)) \
            .astype(dt, copy=False)
    return kernel


def _polygamma_grad_samples(rng):
    # An integer order: the gradient check then differentiates x alone (a has none).
    return [((a.astype(np.int64), x), attrs)
            for (a, x), attrs in _polygamma_samples(rng, d.float64) if x.size]


POLYGAMMA = registry.primitive(
    # dtype_group=(1,): the order may also be an integer tensor, unlike TF, which wants a
    # float one of x's dtype; both are accepted.
    "Polygamma", _polygamma_kernel, dtypes=FLOAT, dtype_group=(1,),
    shape_fn=lambda a, x: AbstractValue(broadcast_shapes(a.shape, x.shape), x.dtype),
    reference=lambda a, x: _scipy_special().polygamma(a, x), samples=_polygamma_samples,
    grad_samples=_polygamma_grad_samples,
    bad_samples=lambda rng: [((np.ones(2, np.complex128), np.ones(2)), {},
                              errors.InvalidArgumentError)],
    # As in TF, the order gets no gradient (polygamma is NaN off the integers).
    vjp=lambda g, a, x, out: (None, g * execute(POLYGAMMA, (a + 1, x))), saves=(0, 1),
    family="math")


# ------------------------------------------------------------------- public functions

erf = public_unary(ERF, "erf", "Computes the Gauss error function element-wise.",
                   ">>> ef.math.erf(ef.constant([0.0])).numpy().tolist()\n[0.0]")
erfc = public_unary(ERFC, "erfc", "Computes the complementary error function 1 - erf(x).",
                    ">>> ef.math.erfc(ef.constant([0.0])).numpy().tolist()\n[1.0]")
erfinv = public_unary(ERFINV, "erfinv", "Computes the inverse error function (|x| < 1).",
                      ">>> ef.math.erfinv(ef.constant([0.0])).numpy().tolist()\n[0.0]")
lgamma = public_unary(
    LGAMMA, "lgamma", "Computes log(|Gamma(x)|) element-wise.",
    ">>> ef.math.lgamma(ef.constant([1.0, 3.0], ef.float64)).numpy().round(4).tolist()\n"
    "[0.0, 0.6931]")
digamma = public_unary(
    DIGAMMA, "digamma", "Computes the digamma function, lgamma's derivative.",
    ">>> ef.math.digamma(ef.constant([1.0], ef.float64)).numpy().round(4).tolist()\n"
    "[-0.5772]")


def polygamma(a, x, name=None):
    """Computes the polygamma function psi^(a)(x), the a-th derivative of digamma.

    Args:
        a: The order: a Tensor of non-negative integer values (NaN elsewhere), float like
            x or of an integer dtype. It gets no gradient, as in TF.
        x: A float Tensor (broadcast against a).
        name: Unused (TF compatibility).

    Returns:
        A Tensor of the broadcast shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.polygamma(1.0, ef.constant([1.0], ef.float64)).numpy().round(4).tolist()
        [1.6449]
    """
    return execute(POLYGAMMA, (a, x))
