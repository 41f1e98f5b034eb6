"""Argument checks shared by the Dataset methods, with errors that name the argument."""

from __future__ import annotations

import operator
import os

import numpy as np

from eagerflow import errors

AUTOTUNE = -1
INFINITE = -1
UNKNOWN = -2


def as_int(value, name, method):
    """A Python int from an int, numpy integer or scalar integer tensor."""
    if hasattr(value, "numpy") and not isinstance(value, (int, np.integer)):
        value = value.numpy()
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("Dataset.%s: `%s` must be an integer, got the bool %r."
                        % (method, name, value))
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("Dataset.%s: `%s` must be an integer, got %r (%s)."
                        % (method, name, value, type(value).__name__)) from None


def positive_int(value, name, method):
    """An int >= 1, else InvalidArgumentError naming ``name``."""
    value = as_int(value, name, method)
    if value < 1:
        raise errors.InvalidArgumentError(
            None, method, "Dataset.%s: `%s` must be greater than zero, got %d."
            % (method, name, value))
    return value


def parallelism(value, name, method):
    """None, a positive int or AUTOTUNE (-1, which becomes the number of CPU cores)."""
    if value is None:
        return None
    value = as_int(value, name, method)
    if value == AUTOTUNE:
        return os.cpu_count() or 1
    if value < 1:
        raise errors.InvalidArgumentError(
            None, method, "Dataset.%s: `%s` must be a positive integer or "
            "tf.data.AUTOTUNE (-1), got %d." % (method, name, value))
    return value


def as_bool(value, name, method):
    if hasattr(value, "numpy"):
        value = value.numpy()
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError("Dataset.%s: `%s` must be a bool, got %r." % (method, name, value))
    return bool(value)


def count_arg(value, name, method):
    """A count where -1 (and None) means "all" / "forever"; other negatives are errors."""
    if value is None:
        return -1
    value = as_int(value, name, method)
    if value < -1:
        raise errors.InvalidArgumentError(
            None, method, "Dataset.%s: `%s` must be >= -1 (-1 means all), got %d."
            % (method, name, value))
    return value
