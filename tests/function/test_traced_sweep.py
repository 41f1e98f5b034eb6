"""Registry-driven sweep: every primitive traced into a graph computes what it computes eagerly.

For each stateless primitive and each of its samples, a function that calls the one dispatch
function on placeholders of the sample's specs is traced and run; its outputs must have the
eager outputs' dtype and shape, and equal values (exactly for integers and bools). For each
differentiable primitive, the gradient a tape computes inside a traced function must equal
the eager tape's gradient. The sweep reads only the registry, so a primitive declared
anywhere is covered with no test code of its own.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes
from eagerflow.ops import load_all, registry
from eagerflow.ops.dispatch import execute

from tests.conftest import count
from tests.test_registry_sweep import _flatten_args, _grad_cases, sweep_dtypes

load_all()
PRIMS = registry.all_primitives()
SWEPT = [p.name for p in PRIMS if p.samples is not None and not p.stateful]
DIFFERENTIABLE = [p.name for p in PRIMS if p.vjp is not None and not p.stateful]

# Traced and eager run the same kernels; only passes (fusion, folding) may reorder float math.
TOLERANCE = {"float16": (2e-3, 2e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-6),
             "complex64": (1e-5, 1e-6)}
DEFAULT_TOLERANCE = (1e-12, 1e-14)


def _spec(array):
    return ef.TensorSpec(array.shape, dtypes.from_numpy(array.dtype))


def _as_tuple(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def _assert_same(name, traced, eager):
    """Same dtype and shape; equal values (allclose for floating point)."""
    if eager is None:
        assert traced is None, "%s: traced gave a value where eager gave None" % name
        return
    assert traced is not None, "%s: traced gave None where eager gave a value" % name
    got = np.asarray(traced._value if traced.dtype == ef.string else traced.numpy())
    want = np.asarray(eager._value if eager.dtype == ef.string else eager.numpy())
    assert traced.dtype is eager.dtype, "%s: dtype %s traced, %s eager" % (
        name, traced.dtype.name, eager.dtype.name)
    assert got.shape == want.shape, "%s: shape %s traced, %s eager" % (
        name, got.shape, want.shape)
    if want.dtype.kind in "fc":
        rtol, atol = TOLERANCE.get(eager.dtype.name, DEFAULT_TOLERANCE)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def _traced(fn, *specs):
    """The ConcreteFunction of ``fn`` for ``specs`` (one list argument of TensorSpecs)."""
    return ef.function(fn).get_concrete_function(*specs)


@pytest.mark.parametrize("name", SWEPT)
def test_traced_equals_eager(name):
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    cases = 0
    for dtype in sweep_dtypes(prim):
        for args, attrs in prim.samples(rng, dtype):
            arrays = [np.asarray(a) for a in _flatten_args(prim, args)]
            inputs = [ef.constant(a) for a in arrays]
            eager = _as_tuple(execute(prim, tuple(inputs), attrs))

            def call(xs, _attrs=attrs):
                return execute(prim, tuple(xs), _attrs)

            concrete = _traced(call, [_spec(a) for a in arrays])
            ops = [n.op for n in concrete.graph.nodes]
            assert prim.name in ops, "%s: no %s node in the traced graph:\n%s" % (
                name, prim.name, concrete.graph.pretty())
            traced = _as_tuple(concrete(inputs))
            assert len(traced) == len(eager), name
            for k, (t, e) in enumerate(zip(traced, eager)):
                # The shape rule used while tracing agrees with what the kernel computed.
                static = concrete.outputs[k]
                assert static.dtype is e.dtype, "%s: traced dtype %s" % (name, static.dtype)
                assert static.shape.is_compatible_with(t.shape), "%s: static shape %s, ran %s" % (
                    name, static.shape, t.shape)
                _assert_same("%s output %d (%s, attrs %r)" % (name, k, dtype.name, attrs), t, e)
            cases += 1
    assert cases, "%s has no samples" % name
    count("traced sweep: primitives", 1)
    count("traced sweep: cases", cases)


@pytest.mark.parametrize("name", SWEPT)
def test_traced_with_unknown_dimensions_equals_eager(name):
    """Traced for inputs whose every dimension is None (as an input_signature allows), the
    shape rules must still give a graph that computes the eager result."""
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    dtype = sweep_dtypes(prim)[0]
    cases = 0
    for args, attrs in prim.samples(rng, dtype):
        arrays = [np.asarray(a) for a in _flatten_args(prim, args)]
        inputs = [ef.constant(a) for a in arrays]
        eager = _as_tuple(execute(prim, tuple(inputs), attrs))

        def call(xs, _attrs=attrs):
            return execute(prim, tuple(xs), _attrs)

        specs = [ef.TensorSpec([None] * a.ndim, dtypes.from_numpy(a.dtype)) for a in arrays]
        concrete = _traced(call, specs)
        traced = _as_tuple(concrete(inputs))
        for k, (t, e) in enumerate(zip(traced, eager)):
            static = concrete.outputs[k]
            assert static.dtype is e.dtype, name
            assert static.shape.is_compatible_with(t.shape), "%s: static shape %s, ran %s" % (
                name, static.shape, t.shape)
            _assert_same("%s output %d, unknown dims (attrs %r)" % (name, k, attrs), t, e)
        cases += 1
    count("traced sweep, unknown dims: cases", cases)


def _tape_gradient(prim, attrs, xs, cotangents):
    """Gradients of ``prim``'s float outputs (seeded by ``cotangents``) w.r.t. float ``xs``."""
    watched = [x for x in xs if x.dtype.is_floating or x.dtype.is_complex]
    with ef.GradientTape() as tape:
        tape.watch(watched)
        outs = _as_tuple(execute(prim, tuple(xs), attrs))
    targets = [o for o in outs if o.dtype.is_floating or o.dtype.is_complex]
    return tape.gradient(targets, watched, output_gradients=list(cotangents))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_traced_gradient_equals_eager(name):
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    cases = _grad_cases(prim, rng)
    assert cases, name
    for args, attrs in cases:
        arrays = [np.asarray(a) for a in args]
        inputs = [ef.constant(a) for a in arrays]
        outs = _as_tuple(execute(prim, tuple(inputs), attrs))
        cot_arrays = [rng.standard_normal(np.shape(o.numpy())).astype(o.dtype.np_dtype)
                      for o in outs if o.dtype.is_floating or o.dtype.is_complex]
        cots = [ef.constant(c) for c in cot_arrays]
        eager = _tape_gradient(prim, attrs, inputs, cots)

        def grad(xs, us, _attrs=attrs):
            return _tape_gradient(prim, _attrs, list(xs), list(us))

        concrete = _traced(grad, [_spec(a) for a in arrays], [_spec(c) for c in cot_arrays])
        traced = concrete(inputs, cots)
        assert len(traced) == len(eager), name
        for k, (t, e) in enumerate(zip(traced, eager)):
            _assert_same("d %s / d input %d (attrs %r)" % (name, k, attrs), t, e)
    count("traced gradient sweep: primitives", 1)
    count("traced gradient sweep: cases", len(cases))
