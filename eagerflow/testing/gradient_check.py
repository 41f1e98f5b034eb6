"""Random-direction finite-difference checks of gradient rules (float64).

For f with inputs x and a random cotangent u and direction v, the VJP must satisfy
``<VJP(u), v> == <u, J v>``; the right side is a central difference
``(<u, f(x + eps v)> - <u, f(x - eps v)>) / (2 eps)``. One scalar comparison checks the
whole Jacobian along a random direction.

Example:
    >>> import numpy as np
    >>> from eagerflow.ops.math.arithmetic import MUL
    >>> from eagerflow.testing import check_vjp
    >>> check_vjp(MUL, (np.ones(3), np.arange(3.0)), {})
    True
"""

from __future__ import annotations

import numpy as np

from eagerflow.ops.dispatch import execute
from eagerflow.ops.vjp import apply_vjp, saved_inputs
from eagerflow.tensor import constant


def _float_mask(args):
    return [np.asarray(a).dtype.kind in "fc" for a in args]


def _random(rng, shape, is_complex):
    """A standard normal sample; complex (independent parts) for complex values."""
    v = rng.standard_normal(shape)
    return v + 1j * rng.standard_normal(shape) if is_complex else v


def _outputs(prim, args, attrs):
    out = execute(prim, tuple(constant(a) for a in args), attrs)
    return out if isinstance(out, tuple) else (out,)


def numeric_vjp_check(prim, args, attrs=None, *, seed=0, eps=1e-6, rtol=1e-5, atol=1e-7,
                      wrt=None):
    """Returns (analytic, numeric) directional derivatives for the comparison.

    Args:
        prim: The Primitive under test.
        args: numpy input arrays; float64 and complex128 ones are differentiated. Complex
            values follow TF's convention: for the real loss ``Re<u, f(x)>`` the gradient
            of a complex input is ``dL/dRe(x) + i dL/dIm(x)``.
        attrs: The primitive's attributes.
        seed: Seed of the random cotangent and direction.
        eps: Finite-difference step.
        wrt: Optional indices of inputs to differentiate (default: all float inputs).
    """
    attrs = attrs or {}
    rng = np.random.default_rng(seed)
    args = [np.asarray(a) for a in args]
    mask = _float_mask(args)
    if wrt is not None:
        mask = [m and i in wrt for i, m in enumerate(mask)]
    inputs = tuple(constant(a) for a in args)
    outs = execute(prim, inputs, attrs)
    outs_t = outs if isinstance(outs, tuple) else (outs,)
    us = [_random(rng, np.shape(o.numpy()), o.dtype.is_complex)
          if o.dtype.is_floating or o.dtype.is_complex else None for o in outs_t]
    cot = tuple(constant(u) if u is not None else None for u in us)
    cotangent = cot if not prim.single else cot[0]
    grads = apply_vjp(prim, cotangent, saved_inputs(prim, inputs),
                      outs if prim.saves_out else None, attrs, [a.shape for a in args])
    vs = [_random(rng, a.shape, a.dtype.kind == "c") if m else None
          for a, m in zip(args, mask)]
    analytic = 0.0
    for g, v in zip(grads, vs):
        if v is not None and g is not None:
            analytic += float(np.real(np.sum(np.conj(np.asarray(g.numpy())) * v)))

    def phi(sign):
        shifted = [a + sign * eps * v if v is not None else a for a, v in zip(args, vs)]
        return sum(float(np.real(np.sum(np.conj(u) * np.asarray(o.numpy()))))
                   for o, u in zip(_outputs(prim, shifted, attrs), us) if u is not None)

    numeric = (phi(1.0) - phi(-1.0)) / (2 * eps)
    return analytic, numeric


def check_vjp(prim, args, attrs=None, *, seed=0, eps=1e-6, rtol=1e-5, atol=1e-7, wrt=None):
    """Asserts that ``prim``'s VJP matches finite differences; returns True.

    Raises:
        AssertionError: With both values when they disagree.
    """
    analytic, numeric = numeric_vjp_check(prim, args, attrs, seed=seed, eps=eps, wrt=wrt)
    scale = max(1.0, abs(numeric))
    if not abs(analytic - numeric) <= atol + rtol * scale * 10:
        raise AssertionError("%s: VJP gives %.10g, finite differences %.10g (attrs %r)"
                             % (prim.name, analytic, numeric, attrs))
    return True
