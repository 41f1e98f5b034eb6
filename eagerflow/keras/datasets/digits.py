"""The 8x8 handwritten digits (1,797 images), shipped inside the package.

Example:
    >>> from eagerflow.keras.datasets import digits
    >>> (x_train, y_train), (x_test, y_test) = digits.load_data()
    >>> x_train.shape[1:], x_train.dtype, sorted(set(y_train.tolist()))[:3]
    ((8, 8), dtype('float32'), [0, 1, 2])
"""

from __future__ import annotations

import gzip
import os

import numpy as np

_PATH = os.path.join(os.path.dirname(__file__), "data", "digits.csv.gz")


def load_arrays():
    """All 1,797 images as float32 [N, 8, 8] (values 0..16) and int64 labels [N]."""
    with gzip.open(_PATH, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float64)
    images = table[:, :64].astype(np.float32).reshape(-1, 8, 8)
    labels = table[:, 64].astype(np.int64)
    return images, labels


def load_data(test_split=0.2, seed=113):
    """Splits the digits into train and test sets (shuffled with a fixed seed).

    Args:
        test_split: Fraction of the images held out for testing.
        seed: Seed of the shuffle, so every run sees the same split.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: float32 images [N, 8, 8] with values in
        0..16 and int64 labels.
    """
    if not 0.0 < test_split < 1.0:
        raise ValueError("test_split must be in (0, 1), got %r" % (test_split,))
    images, labels = load_arrays()
    order = np.random.default_rng(seed).permutation(len(labels))
    images, labels = images[order], labels[order]
    n_test = int(round(len(labels) * test_split))
    return (images[n_test:], labels[n_test:]), (images[:n_test], labels[:n_test])
