"""MNIST handwritten digits (60,000 train and 10,000 test images of 28x28), from local files.

Example:
    >>> from eagerflow.keras.datasets import mnist
    >>> try:
    ...     (x_train, y_train), _ = mnist.load_data(path="/nonexistent/mnist.npz")
    ... except FileNotFoundError as exc:
    ...     print("not found" if "does not download" in str(exc) else exc)
    not found
"""

from __future__ import annotations

import os

from eagerflow.keras.datasets import _idx

__all__ = ["load_data"]

_SOURCE = ("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz (Keras' "
           "copy) or http://yann.lecun.com/exdb/mnist/ (the IDX files)")


def load_data(path="mnist.npz"):
    """Loads MNIST from a local ``mnist.npz`` or the four IDX files; never downloads.

    Looks for ``path`` as given, then in ``$KERAS_HOME/datasets`` (default
    ``~/.keras/datasets``). ``path`` may also be a directory holding
    ``train-images-idx3-ubyte[.gz]``, ``train-labels-idx1-ubyte[.gz]``,
    ``t10k-images-idx3-ubyte[.gz]`` and ``t10k-labels-idx1-ubyte[.gz]``. The ``.npz`` is
    read with ``allow_pickle=False``.

    Args:
        path: A file name (looked up in the Keras data directory), a path, or a directory.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 28, 28) with values
        0..255 and uint8 labels 0..9.

    Raises:
        FileNotFoundError: Naming every place searched and the files expected there.
        ValueError: For a corrupt or truncated file.

    Example:
        >>> from eagerflow.keras.datasets import mnist
        >>> try:
        ...     (x_train, y_train), (x_test, y_test) = mnist.load_data()
        ... except FileNotFoundError:
        ...     x_train = None  # put mnist.npz in ~/.keras/datasets first
    """
    return _load("MNIST", path, "mnist.npz", "mnist")


def _load(name, path, npz_name, subdir):
    path = os.fspath(path) if path is not None else npz_name
    base = _idx.cache_dir()
    candidates = []
    if os.path.isabs(path) or os.path.dirname(path):
        candidates.append(path)
    else:
        candidates += [os.path.join(base, path), os.path.join(base, subdir, path), path]
    searched = []
    for candidate in candidates:
        searched.append(candidate)
        if os.path.isfile(candidate) and candidate.endswith(".npz"):
            return _idx.load_npz(candidate)
        if os.path.isdir(candidate):
            loaded = _idx.load_idx_set(candidate)
            if loaded is not None:
                return loaded
    directories = [os.path.dirname(c) or "." for c in candidates] + [os.path.join(base,
                                                                                  subdir)]
    for directory in dict.fromkeys(directories):
        if os.path.isdir(directory):
            loaded = _idx.load_idx_set(directory)
            if loaded is not None:
                return loaded
        if directory not in searched:
            searched.append(directory)
    raise _idx.not_found(name, searched, [npz_name] + list(_idx._IDX_NAMES), _SOURCE
                         if name == "MNIST" else _FASHION_SOURCE)


_FASHION_SOURCE = ("https://storage.googleapis.com/tensorflow/tf-keras-datasets/ or "
                   "https://github.com/zalandoresearch/fashion-mnist (the IDX files)")
