"""The compiled column kernels of the convolutions (``backend.cpu_jit``) against their numpy
forms: the im2col copy bit for bit, the col2im scatter in the same tap order (the same
bits for the same columns), the convolutions within float tolerance, the registry sweeps
and float64 gradient checks through the compiled forms, and the same bits on one thread
and two, run to run.
"""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import dtypes
from eagerflow.backend import cpu_jit, cpu_threads
from eagerflow.ops.dispatch import execute
from eagerflow.ops.nn import conv_kernels as K
from eagerflow.ops.nn.window_geometry import conv_geometry, crop_spatial, tap_slices
from eagerflow.testing import check_vjp

pytest.importorskip("numba")

RNG = np.random.default_rng(18)
DTYPES = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
TOL = {"float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 1e-5),
       "float64": (1e-12, 1e-12)}


# The compiled forms for every input size (they start at MIN_ELEMENTS otherwise).
pytestmark = pytest.mark.usefixtures("compiled_kernels")


def attrs(nd, strides=1, dilations=1, padding="SAME", fmt=None):
    return K._attrs(nd, strides, dilations, padding, fmt)


# (input shape, filter shape, attrs), one group.
CASES = [
    ((2, 6, 5, 8), (3, 3, 8, 4), attrs(2)),                                  # SAME
    ((1, 7, 6, 3), (3, 2, 3, 3), attrs(2, padding="VALID")),                 # batch 1
    ((2, 9, 9, 2), (3, 3, 2, 5), attrs(2, dilations=2, padding="VALID")),    # dilation
    ((2, 10, 9, 1), (3, 3, 1, 4), attrs(2, dilations=(2, 1))),               # C = 1, SAME
    ((1, 5, 4, 9), (2, 3, 9, 2), attrs(2, padding=((2, 1), (0, 2)))),        # explicit
    ((1, 6, 7, 1), (2, 3, 1, 2), attrs(2, padding=((3, 1), (1, 4)))),        # C = 1, wide pads
    ((2, 11, 10, 3), (2, 2, 3, 4), attrs(2, strides=3, padding="VALID")),    # stride > window
    ((2, 11, 10, 1), (2, 2, 1, 4), attrs(2, strides=(3, 4))),                # C = 1, strided
    ((2, 9, 8, 4), (3, 3, 4, 3), attrs(2, strides=2, dilations=2)),          # both
    ((1, 8, 6, 5), (3, 3, 8, 2), attrs(2, fmt="NCHW")),                      # channels first
    ((1, 1, 8, 6), (3, 3, 1, 2), attrs(2, strides=2, fmt="NCHW")),           # C = 1, first
    ((2, 11, 8), (4, 8, 2), attrs(1, dilations=3)),                          # 1-D
    ((2, 13, 1), (3, 1, 3), attrs(1, strides=4)),                            # 1-D, C = 1
    ((1, 4, 5, 3, 8), (2, 3, 2, 8, 3), attrs(3, padding="VALID")),           # 3-D
    ((1, 5, 4, 6, 1), (3, 2, 3, 1, 2), attrs(3, strides=(2, 1, 2))),         # 3-D, C = 1
    ((1, 5, 5, 8), (1, 1, 8, 3), attrs(2)),                                  # 1x1
    ((0, 5, 5, 3), (3, 3, 3, 2), attrs(2)),                                  # empty batch
    ((2, 0, 5, 3), (3, 3, 3, 2), attrs(2)),                                  # empty rows
    ((3, 30, 30, 16), (3, 3, 16, 8), attrs(2)),                              # several blocks
]


def uniform(shape, dtype):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype.np_dtype)


def _run(prim, args, at, compiled):
    cpu_jit.set_enabled(compiled)
    try:
        return execute(prim, tuple(ef.constant(a) for a in args), at).numpy()
    finally:
        cpu_jit.set_enabled(True)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _channels_last(xs, a):
    return (xs[0],) + xs[2:] + (xs[1],) if a["data_format"] in ("NCHW", "NCW", "NCDHW") \
        else xs


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("xs,ws,a", CASES)
def test_im2col_is_the_numpy_copy_bit_for_bit(xs, ws, a, dtype):
    xs = _channels_last(xs, a)
    x = uniform(xs, dtype)
    at = dict(a, data_format=K.FORMATS[len(xs) - 2][0], ksize=ws[:-2])
    got = _run(K.IM2COL, (x,), at, True)
    np.testing.assert_array_equal(_bits(got), _bits(_run(K.IM2COL, (x,), at, False)))
    assert got.shape == K._ref_im2col(x, **at).shape
    np.testing.assert_array_equal(_bits(got), _bits(K._ref_im2col(x, **at)))


@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("xs,ws,a", CASES)
def test_column_matrix_of_the_compiled_loop_is_the_window_copy(xs, ws, a, dtype):
    # The kernels' own entry (the half types cast to float32 columns in the convolutions).
    xs = _channels_last(xs, a)
    g = conv_geometry(xs, ws, a["strides"], a["dilations"], a["padding"],
                      K.FORMATS[len(xs) - 2][0], False)
    for src in (dtype, dtypes.float16, dtypes.bfloat16):
        x = uniform(xs, src)
        ct = np.float32 if src.np_dtype.itemsize == 2 else dtype.np_dtype
        got = K._column_matrix(np, x, g, a["strides"], a["dilations"], ct)
        cpu_jit.set_enabled(False)
        try:
            want = K._column_matrix(np, x, g, a["strides"], a["dilations"], ct)
        finally:
            cpu_jit.set_enabled(True)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("xs,ws,a", [c for c in CASES if c[0][0]])
def test_col2im_adds_the_taps_in_the_numpy_order(xs, ws, a):
    # The same columns scattered by the compiled loop and by the numpy per-tap adds:
    # the same bits (each element sums its taps in tap order from zero).
    xs = _channels_last(xs, a)
    g = conv_geometry(xs, ws, a["strides"], a["dilations"], a["padding"],
                      K.FORMATS[len(xs) - 2][0], False)
    for ct in (np.float32, np.float64):
        cols = RNG.standard_normal((g.n,) + g.out_sp + g.k + (g.c,)).astype(ct)
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(g.in_sp, g.pads))
        dxp = np.zeros((g.n,) + padded + (g.c,), ct)
        lead = (slice(None),) * (1 + len(g.k))
        for tap, index in tap_slices(g.k, g.out_sp, a["strides"], a["dilations"]):
            dxp[index] += cols[lead + tap]
        want = crop_spatial(np, dxp, g.pads, g.in_sp)
        got = np.full((g.n,) + g.in_sp + (g.c,), np.nan, ct)
        K._COL2IM_JIT.compiled()(cols.reshape(-1), got.reshape(-1),
                                 K._jit_geometry(g, a["strides"], a["dilations"]), 0, g.n)
        np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("xs,ws,a", CASES)
def test_convolutions_compiled_equal_numpy(xs, ws, a, dtype):
    x, w = uniform(xs, dtype), uniform(ws, dtype)
    g = conv_geometry(xs, ws, depthwise=False, **a)
    dy = uniform(g.out_shape(a["data_format"]), dtype)
    rtol, atol = TOL[dtype.name]
    for prim, args, at in [(K.CONV, (x, w), a),
                           (K.CONV_BACKPROP_INPUT, (dy, w), dict(a, input_shape=xs)),
                           (K.CONV_BACKPROP_FILTER, (x, dy), dict(a, filter_shape=ws))]:
        got = _run(prim, args, at, True)
        want = _run(prim, args, at, False)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=prim.name)
        ref = prim.reference(*args, **at).astype(np.float64)
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=max(rtol, 1e-4),
                                   atol=max(atol, 1e-4), err_msg=prim.name)


CONV_PRIMS = ["Conv", "ConvBackpropInput", "ConvBackpropFilter", "Im2Col"]


@pytest.mark.parametrize("name", CONV_PRIMS)
def test_registry_sweeps_through_the_compiled_forms(name):
    from tests import test_registry_sweep as sweep

    sweep.test_reference_sweep(name)
    sweep.test_gradient_sweep(name)


@pytest.mark.parametrize("xs,ws,a", [
    ((2, 7, 6, 3), (3, 3, 3, 4), attrs(2, strides=2)),
    ((1, 6, 7, 1), (2, 3, 1, 3), attrs(2, dilations=(2, 1), padding=((1, 2), (2, 0)))),
    ((2, 9, 4), (3, 4, 2), attrs(1, strides=2, padding="VALID")),
])
def test_float64_gradients_of_the_compiled_forms(xs, ws, a):
    x, w = uniform(xs, dtypes.float64), uniform(ws, dtypes.float64)
    g = conv_geometry(xs, ws, depthwise=False, **a)
    dy = uniform(g.out_shape(a["data_format"]), dtypes.float64)
    for i, (prim, args, at) in enumerate([
            (K.CONV, (x, w), a),
            (K.CONV_BACKPROP_INPUT, (dy, w), dict(a, input_shape=xs)),
            (K.CONV_BACKPROP_FILTER, (x, dy), dict(a, filter_shape=ws))]):
        check_vjp(prim, args, at, seed=i)


@pytest.mark.parametrize("xs,ws,a", [
    ((64, 28, 28, 1), (3, 3, 1, 32), attrs(2, padding="VALID")),   # the CNN's first layer
    ((64, 13, 13, 32), (3, 3, 32, 64), attrs(2, padding="VALID")),  # and its second
    ((20, 3, 30, 30), (3, 3, 3, 2), attrs(2, strides=2, fmt="NCHW")),
    ((9, 300, 4), (5, 4, 6), attrs(1, dilations=2)),
])
def test_one_thread_and_two_give_the_same_bits_run_to_run(xs, ws, a):
    x, w = uniform(xs, dtypes.float32), uniform(ws, dtypes.float32)
    g = conv_geometry(xs, ws, depthwise=False, **a)
    dy = uniform(g.out_shape(a["data_format"]), dtypes.float32)
    ksize = dict(a, ksize=ws[:-2])
    cases = [(K.CONV, (x, w), a),
             (K.CONV_BACKPROP_INPUT, (dy, w), dict(a, input_shape=xs)),
             (K.CONV_BACKPROP_FILTER, (x, dy), dict(a, filter_shape=ws))]
    if a["data_format"] == K.FORMATS[len(xs) - 2][0]:
        cases.append((K.IM2COL, (x,), ksize))
    for prim, args, at in cases:
        outs = []
        try:
            for n in (1, 2, 2, 1):
                cpu_threads.set_threads(n)
                outs.append(_run(prim, args, at, True))
        finally:
            cpu_threads.set_threads(0)
        for out in outs[1:]:
            np.testing.assert_array_equal(_bits(out), _bits(outs[0]), err_msg=prim.name)
        np.testing.assert_allclose(outs[0], _run(prim, args, at, False), rtol=1e-4,
                                   atol=1e-4, err_msg=prim.name)


def test_switched_off_or_small_inputs_take_the_numpy_forms(monkeypatch):
    x = uniform((2, 6, 6, 3), dtypes.float32)
    g = conv_geometry(x.shape, (3, 3, 3, 4), (1, 1), (1, 1), "SAME", "NHWC", False)
    assert K._jit_columns(np, x, np.float32, 1) is not None
    assert K._jit_columns(np, x, np.float16, 1) is None          # half columns: numpy
    assert K._jit_col2im(np, np.float32, 2, 1) is None           # grouped: numpy
    monkeypatch.setattr(cpu_jit, "MIN_ELEMENTS", 1 << 14)
    assert K._jit_columns(np, x, np.float32, (1 << 14) - 1) is None
    try:
        cpu_jit.set_enabled(False)
        assert K._jit_columns(np, x, np.float32, 1 << 20) is None
        assert K._jit_col2im(np, np.float32, 1, 1 << 20) is None
    finally:
        cpu_jit.set_enabled(True)
    assert g.c == 3


@pytest.mark.parametrize("block", [1, 700, 5000])
@pytest.mark.parametrize("xs,ws,a", [
    ((7, 12, 11, 1), (3, 3, 1, 5), attrs(2)),                      # narrow: forward blocks
    ((5, 3, 9, 10), (3, 2, 3, 4), attrs(2, strides=2, fmt="NCHW")),
    ((6, 9, 9, 8), (3, 3, 8, 6), attrs(2, padding="VALID")),        # wide: one matrix
])
def test_blocks_of_examples_give_the_whole_matrix_values(monkeypatch, xs, ws, a, block):
    # Blocks of one example, of a few and of all of them: the forward pass and the input
    # gradient equal the numpy forms (and the blocks' own bits on every thread count).
    monkeypatch.setattr(K, "COLUMN_BLOCK", block)
    monkeypatch.setattr(K, "FORWARD_BLOCK", block)
    x, w = uniform(xs, dtypes.float64), uniform(ws, dtypes.float64)
    g = conv_geometry(xs, ws, depthwise=False, **a)
    dy = uniform(g.out_shape(a["data_format"]), dtypes.float64)
    for prim, args, at in [(K.CONV, (x, w), a),
                           (K.CONV_BACKPROP_INPUT, (dy, w), dict(a, input_shape=xs))]:
        got = _run(prim, args, at, True)
        np.testing.assert_allclose(got, _run(prim, args, at, False), rtol=1e-12, atol=1e-12)
        try:
            cpu_threads.set_threads(1)
            np.testing.assert_array_equal(_bits(_run(prim, args, at, True)), _bits(got))
        finally:
            cpu_threads.set_threads(0)


def test_small_convolutions_and_the_numpy_setting_never_import_numba(tmp_path):
    from tests.fresh_interpreter import run_python_ok

    code = """
        import sys
        import numpy as np
        import eagerflow as ef
        x = ef.constant(np.ones([2, 6, 6, 3], np.float32))
        w = ef.Variable(np.ones([3, 3, 3, 4], np.float32))
        with ef.GradientTape() as tape:
            y = ef.reduce_sum(ef.nn.conv2d(x, w, 1, "SAME"))
        tape.gradient(y, [w])
        assert "numba" not in sys.modules
        if len(sys.argv) > 1:
            x = ef.constant(np.ones([64, 28, 28, 8], np.float32))
            with ef.GradientTape() as tape:
                tape.watch(x)
                y = ef.reduce_sum(ef.nn.conv2d(x, w[:, :, :1, :] * ef.ones([1, 1, 8, 1]),
                                               1, "SAME"))
            tape.gradient(y, x)
            assert "numba" not in sys.modules
        print("OK")
    """
    run_python_ok(code, tmp_path)
    run_python_ok(code.replace("len(sys.argv) > 1", "True"), tmp_path,
                  env={"EAGERFLOW_CPU_KERNELS": "numpy"})
