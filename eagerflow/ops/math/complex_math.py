"""Complex numbers: complex, real, imag, angle and abs (the magnitude, a real dtype, for
complex inputs).

Real-valued functions of a complex ``z`` take TF's gradient convention ``df/dRe(z) +
i df/dIm(z)``.
"""

from __future__ import annotations

import math

import numpy as np

from eagerflow import dtypes as d
from eagerflow.ops import registry
from eagerflow.ops.math.arithmetic import less, zeros_like_t
from eagerflow.ops.math.binary_math import divide_no_nan
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import COMPLEX, _sample_values, broadcast_shapes, unary_samples
from eagerflow.ops.math import _where, _with_dtype
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.math.unary_math import ABS, reciprocal
from eagerflow.tensor import Tensor

__all__ = ["abs", "angle", "complex", "imag", "real"]

EXPORTS = {
    "": ["abs", "complex"],
    "math": ["abs", "angle", "complex", "imag", "real"],
}


def _to_real_shape(x, **attrs):
    return AbstractValue(x.shape, x.dtype.real_dtype)


def _complex_to_real(name, forward, reference, vjp, saves, domain=(-3.0, 3.0)):
    """A unary primitive from complex inputs to their real dtype (ComplexAbs, Real...)."""
    samples = unary_samples(domain)
    prim = registry.primitive(
        name, forward, dtypes=COMPLEX, shape_fn=_to_real_shape, reference=reference,
        vjp=vjp, saves=saves, samples=samples, sweep_dtypes=(d.complex64, d.complex128),
        grad_samples=lambda rng: [s for s in samples(rng, d.complex128) if s[0][0].size],
        family="math")
    prim.domain = ("unary", domain, None)
    return prim


def _complex_abs_vjp(g, x, out):
    return divide_no_nan(complex(g, zeros_like_t(g)) * x, complex(out, zeros_like_t(out)))


COMPLEX_ABS = _complex_to_real("ComplexAbs", lambda xp: xp.abs, np.abs, _complex_abs_vjp,
                               saves=(0, "out"))


# ---------------------------------------------------------------------- complex numbers


def _complex_kernel(xp):
    def kernel(re, im):
        dt = xp.complex64 if re.dtype == xp.float32 else xp.complex128
        return re.astype(dt) + im.astype(dt) * 1j
    return kernel


def _complex_shape(re, im, **attrs):
    dt = d.complex64 if re.dtype is d.float32 else d.complex128
    return AbstractValue(broadcast_shapes(re.shape, im.shape), dt)


def _complex_samples(rng, dtype):
    out = []
    for a, b in (((), ()), ((3,), (3,)), ((2, 1), (1, 3)), ((0,), (0,))):
        out.append(((_sample_values(rng, a, dtype, (-3, 3)),
                     _sample_values(rng, b, dtype, (-3, 3))), {}))
    return out


COMPLEX_PRIM = registry.primitive(
    "Complex", _complex_kernel, dtypes=(d.float32, d.float64), shape_fn=_complex_shape,
    reference=lambda re, im: re + 1j * im.astype(np.result_type(re.dtype, np.complex64)),
    samples=_complex_samples,
    vjp=lambda g, re, im, out: (execute(REAL, (g,)), execute(IMAG, (g,))), saves=(),
    family="math")
REAL = _complex_to_real("Real", lambda xp: (lambda x: x.real.copy()), np.real,
                        vjp=lambda g, x, out: complex(g, zeros_like_t(g)), saves=())
IMAG = _complex_to_real("Imag", lambda xp: (lambda x: x.imag.copy()), np.imag,
                        vjp=lambda g, x, out: complex(zeros_like_t(g), g), saves=())


def _angle_vjp(g, x, out):
    inv = reciprocal(complex(execute(IMAG, (x,)), execute(REAL, (x,))))
    return -complex(g, zeros_like_t(g)) * inv


ANGLE = _complex_to_real("Angle", lambda xp: xp.angle, np.angle, vjp=_angle_vjp, saves=(0,))


# ------------------------------------------------------------------- public functions

def abs(x, name=None):  # noqa: A001 - TF's public name
    """Computes the absolute value element-wise; the magnitude (a real dtype) for complex x.

    The gradient is ``g * sign(x)`` (zero at 0); for complex x it is ``g * x / |x|``.

    Args:
        x: A Tensor of a float, signed integer or complex dtype.
        name: Unused (TF compatibility).

    Returns:
        A Tensor of x's shape; float32/float64 for complex64/complex128 inputs.

    Example:
        >>> import eagerflow as ef
        >>> ef.abs(ef.constant([-2, 3])).numpy().tolist()
        [2, 3]
        >>> ef.abs(ef.constant([3 + 4j])).numpy().tolist()
        [5.0]
    """
    if x.__class__ is Tensor and x._value.dtype.kind != "c":
        return execute(ABS, (x,))
    x, dt = _with_dtype(x)
    return execute(COMPLEX_ABS if dt.is_complex else ABS, (x,))


def real(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the real part of a complex tensor; real tensors come back unchanged.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A float32/float64 Tensor for complex64/complex128 input, else ``input``.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.real(ef.constant([1 + 2j])).numpy().tolist()
        [1.0]
    """
    input, dt = _with_dtype(input)
    return execute(REAL, (input,)) if dt.is_complex else input


def imag(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the imaginary part of a complex tensor; zeros for a real tensor.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A float32/float64 Tensor for complex64/complex128 input, else zeros like ``input``.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.imag(ef.constant([1 + 2j])).numpy().tolist()
        [2.0]
    """
    input, dt = _with_dtype(input)
    return execute(IMAG, (input,)) if dt.is_complex else zeros_like_t(input)


def angle(input, name=None):  # noqa: A002 - TF's argument name
    """Returns the argument (phase) of complex numbers, in [-pi, pi].

    For real input, as in TF: pi where ``input < 0`` and 0 elsewhere.

    Args:
        input: A Tensor.
        name: Unused (TF compatibility).

    Returns:
        A real Tensor of input's shape.

    Example:
        >>> import eagerflow as ef
        >>> ef.math.angle(ef.constant([1j])).numpy().round(4).tolist()  # complex128
        [1.5708]
    """
    input, dt = _with_dtype(input)
    if dt.is_complex:
        return execute(ANGLE, (input,))
    zeros = zeros_like_t(input)
    return _where(less(input, 0), zeros + math.pi, zeros)


def complex(real, imag, name=None):  # noqa: A001 - TF's public name
    """Builds complex numbers ``real + imag * 1j`` from two float tensors.

    Args:
        real: A float32 or float64 Tensor.
        imag: A Tensor of real's dtype (broadcast against real).
        name: Unused (TF compatibility).

    Returns:
        A complex64 (from float32) or complex128 (from float64) Tensor.

    Raises:
        InvalidArgumentError: If the dtypes differ or are not float32/float64.

    Example:
        >>> import eagerflow as ef
        >>> ef.complex(ef.constant([1.0]), ef.constant([2.0])).numpy().tolist()
        [(1+2j)]
    """
    return execute(COMPLEX_PRIM, (real, imag))
