"""Registry-driven sweeps: every primitive against its numpy reference, its gradient
against finite differences, and its rejection of bad inputs.

The sweeps read only the registry, so a primitive declared anywhere is tested here with no
test code of its own. Counts are printed in the pytest summary.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes, errors
from eagerflow.ops import load_all, registry
from eagerflow.ops.dispatch import execute
from eagerflow.testing import check_vjp

from tests.conftest import count

load_all()
PRIMS = registry.all_primitives()
NAMES = [p.name for p in PRIMS]

TOLERANCE = {
    "float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (2e-5, 1e-6),
    "float64": (1e-10, 1e-12), "complex64": (2e-5, 1e-6), "complex128": (1e-10, 1e-12),
}


def sweep_dtypes(prim):
    if prim.sweep_dtypes is not None:
        return list(prim.sweep_dtypes)
    allowed = prim.dtypes if prim.dtypes is not None else dtypes.ALL_DTYPES
    picked = [d for d in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.bool)
              if d in allowed]
    if not picked:
        picked = [d for d in allowed if d.name != "bfloat16"][:2]
    return picked


def _as_tensors(args):
    return tuple(ef.constant(a) if not isinstance(a, (list, tuple)) else
                 [ef.constant(x) for x in a] for a in args)


def _flatten_args(prim, args):
    if prim.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return tuple(args)


def _compare(prim, got, expected, dtype_name):
    got_np = np.asarray(got._value) if got.dtype == ef.string else np.asarray(got.numpy())
    exp_np = np.asarray(expected)
    assert got_np.shape == exp_np.shape, "%s: shape %s != reference %s" % (
        prim.name, got_np.shape, exp_np.shape)
    assert got_np.dtype == exp_np.dtype, "%s: dtype %s != reference %s" % (
        prim.name, got_np.dtype, exp_np.dtype)
    # bfloat16 (an ml_dtypes type) has dtype kind "V"; it is compared as a float.
    if exp_np.dtype.kind in "fc" or exp_np.dtype.name == "bfloat16":
        rtol, atol = prim.tolerance.get(dtype_name, TOLERANCE.get(exp_np.dtype.name,
                                                                  (1e-5, 1e-6)))
        np.testing.assert_allclose(got_np.astype(np.complex128 if exp_np.dtype.kind == "c"
                                                 else np.float64),
                                   exp_np.astype(np.complex128 if exp_np.dtype.kind == "c"
                                                 else np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg="%s (%s)" % (prim.name, dtype_name))
    else:
        np.testing.assert_array_equal(got_np, exp_np, err_msg=prim.name)


def test_every_primitive_is_testable():
    """Each stateless primitive has samples and a reference; stateful (random) primitives
    are checked statistically by their family tests."""
    missing = [p.name for p in PRIMS if not p.stateful and
               (p.samples is None or p.reference is None)]
    assert not missing, "primitives without samples/reference: %s" % missing


@pytest.mark.parametrize("name", NAMES)
def test_reference_sweep(name):
    prim = registry.get(name)
    if prim.reference is None or prim.samples is None:
        pytest.skip("stateful primitive: checked statistically by its family tests")
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    cases = 0
    for dtype in sweep_dtypes(prim):
        for args, attrs in prim.samples(rng, dtype):
            flat = _flatten_args(prim, args)
            inputs = tuple(ef.constant(a) for a in flat)
            got = execute(prim, inputs, attrs)
            expected = prim.reference(*flat, **attrs)
            if prim.single:
                _compare(prim, got, expected, dtype.name)
            else:
                assert len(got) == len(expected), name
                for g, e in zip(got, expected):
                    _compare(prim, g, e, dtype.name)
            cases += 1
    assert cases > 0, "%s has no samples" % name
    count("reference sweep: primitives", 1)
    count("reference sweep: cases", cases)


DIFFERENTIABLE = [p.name for p in PRIMS if p.vjp is not None]


def _grad_cases(prim, rng):
    if prim.grad_samples is not None:
        return prim.grad_samples(rng)
    if dtypes.float64 not in (prim.dtypes or dtypes.ALL_DTYPES):
        return []
    cases = []
    for args, attrs in prim.samples(rng, dtypes.float64):
        flat = _flatten_args(prim, args)
        if any(np.asarray(a).size == 0 for a in flat):
            continue
        cases.append((flat, attrs))
    return cases


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_sweep(name):
    prim = registry.get(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    cases = _grad_cases(prim, rng)
    assert cases, "%s is differentiable but has no float64 samples for the gradient check" % name
    for i, (args, attrs) in enumerate(cases):
        check_vjp(prim, args, attrs, seed=i)
    count("gradient sweep: differentiable primitives checked", 1)
    count("gradient sweep: cases", len(cases))


def test_gradient_sweep_covers_every_differentiable_primitive():
    count("registry: differentiable primitives", len(DIFFERENTIABLE))
    count("registry: primitives", len(PRIMS))
    assert len(DIFFERENTIABLE) == len({p for p in DIFFERENTIABLE})


_BAD_DTYPE_ORDER = (dtypes.bool, dtypes.complex64, dtypes.int32, dtypes.uint8,
                    dtypes.float16, dtypes.float64)


def _bad_inputs(prim, rng):
    """Yields (description, args, attrs, expected error classes) for one primitive."""
    dtype = sweep_dtypes(prim)[0]
    samples = [s for s in prim.samples(rng, dtype)
               if all(np.asarray(a).size for a in _flatten_args(prim, s[0]))] or \
        prim.samples(rng, dtype)
    args, attrs = samples[min(1, len(samples) - 1)]
    flat = list(_flatten_args(prim, args))
    group = range(len(flat)) if prim.dtype_group == "all" else prim.dtype_group
    group = [i for i in group if i < len(flat)]
    if prim.dtypes is not None and group:
        for bad in _BAD_DTYPE_ORDER:
            if bad not in prim.dtypes:
                casted = list(flat)
                for i in group:
                    with np.errstate(all="ignore"):
                        casted[i] = np.asarray(flat[i]).astype(bad.np_dtype)
                yield ("dtype %s" % bad.name, casted, attrs,
                       (errors.InvalidArgumentError, errors.UnimplementedError))
                break
    if len(group) >= 2:
        other = dtypes.float64 if dtype is not dtypes.float64 else dtypes.float32
        if prim.dtypes is None or other in prim.dtypes:
            mixed = list(flat)
            mixed[group[-1]] = np.asarray(flat[group[-1]]).astype(other.np_dtype)
            yield "mixed dtypes", mixed, attrs, (errors.InvalidArgumentError,)
    if prim.domain is not None and prim.domain[0] == "binary":
        a = np.asarray(flat[0]).ravel()[:1].astype(np.asarray(flat[0]).dtype)
        x = np.resize(a, (2, 3))
        y = np.resize(np.asarray(flat[1]).ravel()[:1], (4,)).astype(np.asarray(flat[1]).dtype)
        yield "incompatible shapes", [x, y], attrs, (errors.InvalidArgumentError,)
    if prim.bad_samples is not None:
        for bad_args, bad_attrs, exc in prim.bad_samples(rng):
            yield "declared bad sample", list(_flatten_args(prim, bad_args)), bad_attrs, exc


@pytest.mark.parametrize("name", NAMES)
def test_bad_input_sweep(name):
    prim = registry.get(name)
    if prim.samples is None:
        pytest.skip("no samples")
    rng = np.random.default_rng(7)
    tried = 0
    for what, args, attrs, exc in _bad_inputs(prim, rng):
        with pytest.raises(exc) as info:
            execute(prim, tuple(ef.constant(a) for a in args), attrs)
        message = str(info.value)
        assert prim.name in message or (info.value.op == prim.name), (
            "%s (%s): the error does not name the op: %s" % (name, what, message))
        tried += 1
    count("bad-input sweep: (op, bad input) pairs", tried)


ELEMENTWISE = [p.name for p in PRIMS if p.domain is not None and p.reference is not None]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_property(name):
    """Hypothesis: broadcasting shapes and values across the op's domain match numpy."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    prim = registry.get(name)
    kind, domain, domain_y = prim.domain
    dtype = sweep_dtypes(prim)[0]
    n = 1 if kind == "unary" else 2

    def values(shape, dom):
        if dtype.is_bool:
            return hnp.arrays(np.bool_, shape)
        lo, hi = dom
        if dtype.is_integer:
            info = np.iinfo(dtype.np_dtype)
            elements = st.integers(max(int(lo), int(info.min)), min(int(hi), int(info.max)))
        else:
            elements = st.floats(float(lo), float(hi), width=64, allow_nan=False)
        return hnp.arrays(dtype.np_dtype if not dtype.is_complex else np.float64, shape,
                          elements=elements).map(lambda a: a.astype(dtype.np_dtype))

    @settings(max_examples=15, deadline=None, derandomize=True)
    @given(st.data())
    def check(data):
        shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=n, max_dims=3,
                                                             max_side=4))
        doms = [domain, domain_y][:n]
        arrays = [data.draw(values(s, d)) for s, d in zip(shapes.input_shapes, doms)]
        got = execute(prim, tuple(ef.constant(a) for a in arrays), {})
        _compare(prim, got, prim.reference(*arrays), dtype.name)

    check()
    del hypothesis
    count("hypothesis: elementwise primitives", 1)
