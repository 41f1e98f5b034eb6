"""Fashion-MNIST (60,000 train and 10,000 test 28x28 images of clothing, 10 classes), from
local files.

Keras keeps the four IDX files in ``~/.keras/datasets/fashion-mnist/``; that is where
``load_data`` looks by default.

Example:
    >>> from eagerflow.keras.datasets import fashion_mnist
    >>> try:
    ...     fashion_mnist.load_data(path="/nonexistent")
    ... except FileNotFoundError as exc:
    ...     print("fashion-mnist" in str(exc))
    True
"""

from __future__ import annotations

from eagerflow.keras.datasets import mnist

__all__ = ["load_data"]


def load_data(path="fashion-mnist"):
    """Loads Fashion-MNIST from local IDX files (or a ``.npz``); never downloads.

    Args:
        path: A directory holding ``train-images-idx3-ubyte[.gz]``,
            ``train-labels-idx1-ubyte[.gz]``, ``t10k-images-idx3-ubyte[.gz]`` and
            ``t10k-labels-idx1-ubyte[.gz]`` (default: ``fashion-mnist`` in the Keras data
            directory), or a ``.npz`` with ``x_train``, ``y_train``, ``x_test``, ``y_test``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 images (N, 28, 28), uint8 labels.

    Raises:
        FileNotFoundError: Naming every place searched and the files expected there.
        ValueError: For a corrupt or truncated file.

    Example:
        >>> from eagerflow.keras.datasets import fashion_mnist
        >>> try:
        ...     (x_train, y_train), _ = fashion_mnist.load_data()
        ... except FileNotFoundError:
        ...     x_train = None  # put the IDX files in ~/.keras/datasets/fashion-mnist first
    """
    return mnist._load("Fashion-MNIST", path, "fashion-mnist.npz", "fashion-mnist")
