"""Second-order gradients: each gradient rule is itself differentiated by an outer tape.

For a primitive P, inputs x, a cotangent u and a weight w, let h(x) = <VJP_P(u; x), w>.
Because gradient rules are ordinary op calls, an outer tape records them, so dh/dx comes
from a nested tape; it must match a central finite difference of h along a random
direction. Checked over the elementwise, matmul, reduction and softmax families.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow.ops import load_all, registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.vjp import apply_vjp, saved_inputs

from tests.conftest import count

load_all()

FAMILY_NAMES = {"MatMul", "Sum", "Mean", "Max", "Min", "Prod", "Softmax", "LogSoftmax",
                "Cumsum", "Einsum"}


def _second_order_prims():
    out = []
    for prim in registry.all_primitives():
        if prim.vjp is None or prim.stateful:
            continue
        if prim.name in FAMILY_NAMES or (prim.domain is not None and prim.family == "math"):
            out.append(prim.name)
    return out


NAMES = _second_order_prims()


def _h(prim, args, attrs, u, w, watched):
    inputs = tuple(watched[i] if i in watched else ef.constant(a) for i, a in enumerate(args))
    out = execute(prim, inputs, attrs)
    cot = tuple(ef.constant(ui) for ui in u) if not prim.single else ef.constant(u[0])
    outs = out if isinstance(out, tuple) else (out,)
    grads = apply_vjp(prim, cot, saved_inputs(prim, inputs), out if prim.saves_out else None,
                      attrs, [np.shape(a) for a in args])
    total = None
    for g, wi in zip(grads, w):
        if g is None or wi is None:
            continue
        term = ef.reduce_sum(ef.math.real(g) * ef.constant(wi)) if g.dtype.is_complex else \
            ef.reduce_sum(g * ef.constant(wi))
        total = term if total is None else total + term
    del outs
    return total


@pytest.mark.parametrize("name", NAMES)
def test_second_order(name):
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    cases = prim.grad_samples(rng) if prim.grad_samples is not None else [
        (args, attrs) for args, attrs in prim.samples(rng, ef.float64)
        if all(np.asarray(a).size for a in args)] if prim.dtypes is None or \
        ef.float64 in prim.dtypes else []
    cases = [(a, at) for a, at in cases if all(np.asarray(x).dtype.kind != "c" for x in a)]
    if not cases:
        pytest.skip("no real float64 samples")
    args, attrs = cases[min(1, len(cases) - 1)]
    args = [np.asarray(a) for a in args]
    floats = [i for i, a in enumerate(args) if a.dtype == np.float64]
    out = execute(prim, tuple(ef.constant(a) for a in args), attrs)
    outs = out if isinstance(out, tuple) else (out,)
    u = [rng.standard_normal(np.shape(o.numpy())) for o in outs]
    w = [rng.standard_normal(a.shape) if i in floats else None for i, a in enumerate(args)]
    v = {i: rng.standard_normal(args[i].shape) for i in floats}

    watched = {i: ef.constant(args[i]) for i in floats}
    with ef.GradientTape() as tape:
        tape.watch(list(watched.values()))
        h = _h(prim, args, attrs, u, w, watched)
    if h is None:
        pytest.skip("no float input gradient")
    grads = tape.gradient(h, [watched[i] for i in floats])
    analytic = sum(float(np.sum(g.numpy() * v[i])) for g, i in zip(grads, floats)
                   if g is not None)
    eps = 1e-5

    def h_at(sign):
        shifted = [a + sign * eps * v[i] if i in v else a for i, a in enumerate(args)]
        return float(_h(prim, shifted, attrs, u, w, {}))

    numeric = (h_at(1) - h_at(-1)) / (2 * eps)
    assert abs(analytic - numeric) <= 1e-6 + 1e-4 * max(1.0, abs(numeric)), (
        "%s: second-order %.8g vs finite differences %.8g" % (name, analytic, numeric))
    count("second-order: primitives checked", 1)
