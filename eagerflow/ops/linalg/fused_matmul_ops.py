"""``FusedMatMul``: a matrix product, its bias and optionally a relu in one kernel.

``FusedMatMul(a, b, bias) = act(op(a) @ op(b) + bias)`` for matrices ``a``, ``b`` and a
bias along the result's last axis, ``op`` the ``transpose_*`` flags and ``act`` the relu
(``activation="Relu"``) or nothing. No public function makes it: the optimizer's
``fused_matmul`` pass writes it for a MatMul whose only use is a bias add (and a relu
after it), the dense layer's forward pass (TF's remapper writes ``_FusedMatMul`` the same
way).

The sum and the relu write into the product's own buffer: the unfused pair allocated a
second buffer of its size for the sum. From ``GEMM_BIAS_MIN_ELEMENTS`` result elements on
numpy with float32/float64, the buffer is filled with the bias rows first and the product
accumulated into it by one GEMM with beta = 1 (``cpu_blas.gemm_accumulate``), which reads
the bias in cache-sized blocks instead of a pass over the whole product. One thread, CPU
time, median of 40, against MatMul then the bias add (and relu): [1024, 128] @ [128, 512]
1.15 -> 0.98 ms (1.31 -> 1.19 ms with the relu), [1024, 784] @ [784, 512] 6.11 -> 5.74 ms;
[128, 784] @ [784, 512] with the relu 0.94 -> 0.95 ms (the in-place form; the GEMM form
was 1.00 ms there). The sum is the same up to rounding (in the GEMM form the bias enters
the accumulation first, not last). Other backends compute the product and add the bias in
place; float16 and bfloat16 compute in float32 and round once.

Example:
    >>> import numpy as np
    >>> from eagerflow.ops.dispatch import execute
    >>> from eagerflow.ops.linalg.fused_matmul_ops import FUSED_MATMUL
    >>> a = np.ones((2, 3), np.float32)
    >>> execute(FUSED_MATMUL, (a, np.ones((3, 2), np.float32), np.array([-4.0, 1.0],
    ...         np.float32)), {"activation": "Relu"}).numpy().tolist()
    [[0.0, 4.0], [0.0, 4.0]]
"""

from __future__ import annotations

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.backend import cpu_blas, cpu_threads
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.family import matmul_cost
from eagerflow.ops.linalg import matmul_ops
from eagerflow.ops.registry import AbstractValue

__all__ = ["FUSED_MATMUL", "ACTIVATIONS"]

ACTIVATIONS = ("", "Relu")
# From this many result elements the bias rows go into the GEMM (beta = 1); below, the
# product is computed and the bias added in place (the same speed there, one call less).
GEMM_BIAS_MIN_ELEMENTS = 1 << 18
_DTYPES = (d.float16, d.bfloat16, d.float32, d.float64)


def _check(a_shape, b_shape, bias_shape, transpose_a, transpose_b, activation):
    if activation not in ACTIVATIONS:
        raise errors.InvalidArgumentError(
            None, None, "FusedMatMul: activation must be one of %s, got %r."
            % (ACTIVATIONS, activation))
    for what, s in (("a", a_shape), ("b", b_shape)):
        if len(s) != 2:
            raise errors.InvalidArgumentError(
                None, None, "FusedMatMul: %s must be a matrix, got shape %s."
                % (what, matmul_ops._shape_text(s)))
    exc = matmul_ops._matmul_mismatch(a_shape, b_shape, transpose_a, transpose_b)
    if exc is not None:
        raise exc
    n = b_shape[0] if transpose_b else b_shape[1]
    if len(bias_shape) != 1 or (None not in (n, bias_shape[0]) and bias_shape[0] != n):
        raise errors.InvalidArgumentError(
            None, None, "FusedMatMul: the bias must be a vector of the product's %s columns, "
            "got shape %s." % (n, matmul_ops._shape_text(bias_shape)))
    m = a_shape[1] if transpose_a else a_shape[0]
    return m, n


def _kernel(xp):
    matmul = xp.matmul
    numpy = cpu_threads.is_numpy(xp)
    if numpy:
        from eagerflow.ops.nn.activation_ops import relu_numpy
    maximum = xp.maximum

    def kernel(a, b, bias, *, transpose_a=False, transpose_b=False, activation=""):
        m, n = _check(a.shape, b.shape, bias.shape, transpose_a, transpose_b, activation)
        a = a.T if transpose_a else a
        b = b.T if transpose_b else b
        dtype = a.dtype
        if numpy and m * n >= GEMM_BIAS_MIN_ELEMENTS and cpu_blas.available(dtype) and \
                dtype == b.dtype == bias.dtype:
            out = np.empty((m, n), dtype)
            out[...] = bias
            cpu_blas.gemm_accumulate(out, a, b)
        elif dtype.itemsize < 4:
            # Half types: the product and the sum in float32, rounded once.
            f32 = xp.float32
            out = matmul(a.astype(f32), b.astype(f32))
            out += bias.astype(f32)
        else:
            out = matmul(a, b)
            out += bias
        if activation == "Relu":
            if numpy:
                relu_numpy(out, out=out)
            else:
                maximum(out, 0, out=out)
        return out if out.dtype == dtype else out.astype(dtype)

    return kernel


def _shape(a, b, bias, *, transpose_a=False, transpose_b=False, activation=""):
    if a.shape is None or b.shape is None or bias.shape is None:
        return AbstractValue((None, None), a.dtype)
    m, n = _check(a.shape, b.shape, bias.shape, transpose_a, transpose_b, activation)
    return AbstractValue((m, n if n is not None else bias.shape[0]), a.dtype)


def _reference(a, b, bias, *, transpose_a=False, transpose_b=False, activation=""):
    w = (lambda x: x.astype(np.float64))
    out = np.matmul(w(a.T if transpose_a else a), w(b.T if transpose_b else b)) + w(bias)
    return (np.maximum(out, 0) if activation == "Relu" else out).astype(a.dtype)


def _vjp(g, a, b, bias, out, *, transpose_a=False, transpose_b=False, activation=""):
    # The gradients of MatMul, then AddV2 (the bias sums the rows), then Relu.
    from eagerflow.ops.nn.activation_ops import RELU_GRAD
    from eagerflow.ops.reduce.reductions import reduce_sum

    if activation == "Relu":
        g = execute(RELU_GRAD, (g, out))
    ga, gb = matmul_ops._matmul_vjp(g, a, b, None, transpose_a=transpose_a,
                                    transpose_b=transpose_b)
    return ga, gb, reduce_sum(g, axis=0)


def _samples(rng, dtype):
    def r(*shape):
        return rng.uniform(-2, 2, size=shape).astype(dtype.np_dtype)

    out = []
    for activation in ACTIVATIONS:
        for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
            a = r(3, 2) if ta else r(2, 3)
            b = r(4, 3) if tb else r(3, 4)
            out.append(((a, b, r(4)), {"transpose_a": ta, "transpose_b": tb,
                                       "activation": activation}))
        out.append(((r(0, 3), r(3, 2), r(2)), {"activation": activation}))
        out.append(((r(2, 0), r(0, 3), r(3)), {"activation": activation}))
        out.append(((r(5, 7), r(7, 1), r(1)), {"activation": activation}))
    return out


def _bad_samples(rng):
    x = rng.standard_normal
    bad = errors.InvalidArgumentError
    return [((x((2, 3)), x((3, 4)), x((3,))), {}, bad),
            ((x((2, 3)), x((4, 4)), x((4,))), {}, bad),
            ((x((2, 2, 3)), x((3, 4)), x((4,))), {}, bad),
            ((x((2, 3)), x((3, 4)), x((4,))), {"activation": "Tanh"}, bad)]


FUSED_MATMUL = registry.primitive(
    "FusedMatMul", _kernel, dtypes=_DTYPES, shape_fn=_shape, vjp=_vjp, saves=(0, 1, "out"),
    reference=_reference, samples=_samples, bad_samples=_bad_samples,
    sweep_dtypes=_DTYPES, family="linalg", cost=matmul_cost,
    tolerance={"float16": (2e-2, 2e-2), "bfloat16": (6e-2, 6e-2)},
    doc="``act(op(a) @ op(b) + bias)``, written by the optimizer for a dense layer.")
