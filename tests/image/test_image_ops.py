"""eagerflow.image against outputs recorded with TensorFlow 2.21 (tests/data/tf_reference,
written by scripts/record_tf_reference.py) on the same inputs, plus gradients and tracing."""

import os

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

REF = np.load(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data",
                           "tf_reference", "image_ops.npz"))
IMG = REF["input"]  # [2, 7, 9, 3] float32 in [0, 255)

CASES = [k for k in REF.files if k.split("_")[0] in (
    "bilinear", "nearest", "bicubic", "area", "lanczos3", "gaussian", "mitchellcubic")]
AA = np.load(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data",
                          "tf_reference", "resize_antialias.npz"))
AA_CASES = sorted(k for k in AA.files if not k.startswith("input_"))


@pytest.mark.parametrize("key", CASES)
def test_resize_matches_tensorflow(key):
    method, size, mode = key.split("_")
    h, w = (int(s) for s in size.split("x"))
    got = ef.image.resize(IMG, [h, w], method=method, antialias=mode == "aa")
    assert got.dtype is ef.float32 and got.shape == REF[key].shape
    # float32 sums in another order: a few ulps of values up to 255.
    np.testing.assert_allclose(got.numpy(), REF[key], rtol=0, atol=5e-4)


@pytest.mark.parametrize("key", AA_CASES)
def test_resize_antialias_matches_tensorflow(key):
    # Down- and up-scaling by many factors, every method, antialias=True: within 1e-3 of
    # TF on values up to 255 (the span of each kernel is computed in float32, as TF does).
    which, method, size = key.split("_")
    h, w = (int(s) for s in size.split("x"))
    got = ef.image.resize(AA["input_" + which], [h, w], method=method, antialias=True)
    assert got.shape == AA[key].shape
    np.testing.assert_allclose(got.numpy(), AA[key], rtol=0, atol=1e-3)


def test_resize_keeps_rank_dtype_for_nearest_and_aspect_ratio():
    img = np.arange(2 * 4 * 6 * 1, dtype=np.uint8).reshape(2, 4, 6, 1)
    out = ef.image.resize(img[0], [2, 3], method="nearest")
    assert out.dtype is ef.uint8 and out.shape == (2, 3, 1)
    np.testing.assert_array_equal(out.numpy(), img[0][1::2, 1::2])  # half-pixel centres
    assert ef.image.resize(img, [8, 8], preserve_aspect_ratio=True).shape == (2, 5, 8, 1)
    with pytest.raises(errors.InvalidArgumentError, match="method"):
        ef.image.resize(img, [2, 2], method="cubic")
    with pytest.raises(errors.InvalidArgumentError, match="size"):
        ef.image.resize(img, [0, 2])


def test_resize_gradient_and_trace():
    x = ef.Variable(IMG[:1].astype(np.float64))
    with ef.GradientTape() as tape:
        y = ef.image.resize(x, [4, 5], method="bicubic")
        loss = ef.reduce_sum(y * y)
    g = tape.gradient(loss, x).numpy()
    # Finite differences at two pixels.
    for idx in [(0, 3, 4, 1), (0, 0, 0, 0)]:
        e = np.zeros_like(IMG[:1], np.float64)
        e[idx] = 1e-3

        def f(v):
            return float(ef.reduce_sum(ef.image.resize(v, [4, 5], method="bicubic") ** 2))
        num = (f(IMG[:1] + e) - f(IMG[:1] - e)) / 2e-3
        np.testing.assert_allclose(g[idx], num, rtol=1e-5)
    traced = ef.function(lambda v: ef.image.resize(v, [13, 17]))(IMG)
    np.testing.assert_allclose(traced.numpy(), ef.image.resize(IMG, [13, 17]).numpy())


@pytest.mark.parametrize("name,fn", [
    ("crop_or_pad_5x11", lambda: ef.image.resize_with_crop_or_pad(IMG, 5, 11)),
    ("adjust_contrast", lambda: ef.image.adjust_contrast(IMG / 255.0, 1.7)),
    ("adjust_saturation", lambda: ef.image.adjust_saturation(IMG / 255.0, 0.4)),
    ("rgb_to_hsv", lambda: ef.image.rgb_to_hsv(IMG / 255.0)),
    ("rgb_to_grayscale", lambda: ef.image.rgb_to_grayscale(IMG)),
    ("per_image_standardization", lambda: ef.image.per_image_standardization(IMG)),
    ("convert_uint8_to_float", lambda: ef.image.convert_image_dtype(IMG.astype(np.uint8),
                                                                     ef.float32)),
    ("convert_float_to_uint8", lambda: ef.image.convert_image_dtype(IMG / 255.0, ef.uint8)),
    ("central_crop_0.5", lambda: ef.image.central_crop(IMG, 0.5)),
])
def test_image_ops_match_tensorflow(name, fn):
    got = fn().numpy()
    assert got.shape == REF[name].shape and got.dtype == REF[name].dtype
    np.testing.assert_allclose(got.astype(np.float64), REF[name].astype(np.float64),
                               rtol=0, atol=1e-6)


def test_flips_crops_pads_and_random_ops():
    x = np.arange(2 * 3 * 4 * 1, dtype=np.float32).reshape(2, 3, 4, 1)
    np.testing.assert_array_equal(ef.image.flip_left_right(x).numpy(), x[:, :, ::-1])
    np.testing.assert_array_equal(ef.image.flip_up_down(x).numpy(), x[:, ::-1])
    np.testing.assert_array_equal(ef.image.crop_to_bounding_box(x, 1, 1, 2, 2).numpy(),
                                  x[:, 1:3, 1:3])
    padded = ef.image.pad_to_bounding_box(x[0], 1, 2, 5, 7).numpy()
    assert padded.shape == (5, 7, 1) and padded[1:4, 2:6].tolist() == x[0].tolist()
    assert padded.sum() == x[0].sum()
    with pytest.raises(errors.InvalidArgumentError, match="does not fit"):
        ef.image.crop_to_bounding_box(x, 2, 0, 2, 2)
    flips = [ef.image.random_flip_left_right(x[0], seed=s).numpy() for s in range(20)]
    assert any((f == x[0][:, ::-1]).all() for f in flips) and any((f == x[0]).all()
                                                                   for f in flips)
    crop = ef.image.random_crop(x, [2, 2, 3, 1]).numpy()
    assert crop.shape == (2, 2, 3, 1)
    np.testing.assert_array_equal(ef.image.grayscale_to_rgb(x).numpy(),
                                  np.concatenate([x, x, x], -1))
    hsv = ef.image.rgb_to_hsv(IMG[0] / 255.0)
    np.testing.assert_allclose(ef.image.hsv_to_rgb(hsv).numpy(), IMG[0] / 255.0, atol=1e-6)
    b = ef.image.adjust_brightness(np.full((1, 1, 3), 200, np.uint8), 0.5).numpy()
    assert b.tolist() == [[[255, 255, 255]]]  # saturates as TF's does
