"""What travels with a layer call: automatic layer names, Keras masks attached to tensors,
the stack of running layer calls (which carries ``training`` to inner layers), the hook for
symbolic inputs, and the structure helpers ``Layer.__call__`` uses.

Example:
    >>> import eagerflow as ef
    >>> from eagerflow.keras.layers.call_context import get_keras_mask, set_keras_mask
    >>> t = ef.ones([2]); set_keras_mask(t, ef.constant([True, False]))
    >>> get_keras_mask(t).numpy().tolist()
    [True, False]
"""

from __future__ import annotations

import functools
import inspect
import re
import threading
import weakref

import numpy as np

import eagerflow as ef
from eagerflow import nest
from eagerflow.tensor import Tensor
from eagerflow.tensor_shape import TensorShape

__all__ = ["to_snake_case", "reset_name_uids", "set_keras_mask", "get_keras_mask",
           "set_symbolic_call_handler", "in_call_context", "shapes_of"]


# -- names ------------------------------------------------------------------------------------

def to_snake_case(name):
    """Keras' class-name-to-layer-name rule: ``Conv2D`` -> ``conv2d``, ``ReLU`` -> ``re_lu``.

    Example:
        >>> from eagerflow.keras.layers.base import to_snake_case
        >>> to_snake_case("BatchNormalization"), to_snake_case("SimpleRNN")
        ('batch_normalization', 'simple_rnn')
    """
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake if snake[0] != "_" else "private" + snake


_uids = {}
_uid_lock = threading.Lock()


def _unique_layer_name(base):
    with _uid_lock:
        count = _uids.get(base, 0)
        _uids[base] = count + 1
    return base if count == 0 else "%s_%d" % (base, count)


def reset_name_uids():
    """Restarts automatic layer names (``dense``, ``dense_1``...); ``clear_session`` calls it.

    Example:
        >>> from eagerflow.keras.layers.base import reset_name_uids
        >>> reset_name_uids()
    """
    with _uid_lock:
        _uids.clear()


# -- masks ------------------------------------------------------------------------------------

_masks = {}


def set_keras_mask(tensor, mask):
    """Attaches a Keras mask to a tensor (held weakly: it goes when the tensor goes).

    Example:
        >>> from eagerflow.keras.layers.base import get_keras_mask, set_keras_mask
        >>> import eagerflow as ef
        >>> t = ef.ones([2, 3]); set_keras_mask(t, ef.constant([True, False]))
        >>> get_keras_mask(t).numpy().tolist()
        [True, False]
    """
    key = id(tensor)
    if mask is None:
        _masks.pop(key, None)
        return
    try:
        ref = weakref.ref(tensor, lambda _, k=key: _masks.pop(k, None))
    except TypeError:  # an object that cannot be weakly referenced carries no mask
        return
    _masks[key] = (ref, mask)


def get_keras_mask(tensor):
    """Returns the mask attached with ``set_keras_mask``, or None."""
    entry = _masks.get(id(tensor))
    if entry is not None and entry[0]() is tensor:
        return entry[1]
    return None


# -- call context -----------------------------------------------------------------------------

class _CallStack(threading.local):
    frames = ()


_call_stack = _CallStack()
_symbolic_handler = None


def set_symbolic_call_handler(handler):
    """Installs ``handler(layer, inputs, args, kwargs)``, used when an input is symbolic.

    Args:
        handler: A callable, or None to remove it.

    Example:
        >>> from eagerflow.keras.layers.base import set_symbolic_call_handler
        >>> set_symbolic_call_handler(None)
    """
    global _symbolic_handler
    _symbolic_handler = handler


def _is_symbolic(x):
    return getattr(x, "_is_keras_symbolic", False) is True


def in_call_context():
    """True while some layer's ``call`` is running on this thread."""
    return bool(_call_stack.frames)


@functools.lru_cache(maxsize=None)
def _call_signature(cls):
    """(takes training, takes mask, takes **kwargs, training default) of ``cls.call``."""
    params = inspect.signature(cls.call).parameters
    training = params.get("training")
    default = None
    if training is not None and training.default is not inspect.Parameter.empty:
        default = training.default
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return training is not None, "mask" in params, var_kw, default


def _is_tensor_like(x):
    return isinstance(x, Tensor) or getattr(x, "_is_variable", False)


def _convert(x):
    if isinstance(x, (np.ndarray, np.generic)):
        return ef.convert_to_tensor(x)
    if isinstance(x, (float, int)) and not isinstance(x, bool):
        return ef.convert_to_tensor(x)
    return x


# Deeper input structures than this are refused (a tensor has at most 64 dimensions, and
# the structure walks below recurse): a clear error instead of a RecursionError.
MAX_INPUT_NESTING = 64


def check_nesting(structure, layer):
    """Raises ValueError when lists/tuples/dicts in ``structure`` nest deeper than
    MAX_INPUT_NESTING (walked without recursion)."""
    stack = [(structure, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, tuple, dict)):
            if depth >= MAX_INPUT_NESTING:
                raise ValueError("Layer %s: its inputs are lists nested more than %d levels "
                                 "deep; pass tensors (or a shallow structure of them)."
                                 % (layer, MAX_INPUT_NESTING))
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children)


def _map_structure(fn, structure):
    if isinstance(structure, (list, tuple, dict)):
        try:
            return nest.map_structure(fn, structure)
        except (TypeError, ValueError):
            return structure
    return fn(structure)


def _flatten(structure):
    if isinstance(structure, (list, tuple, dict)):
        try:
            return nest.flatten(structure)
        except (TypeError, ValueError):
            return [structure]
    return [structure]


def shapes_of(structure):
    """The TensorShape of every tensor-like leaf of ``structure`` (same nesting).

    Example:
        >>> from eagerflow.keras.layers.base import shapes_of
        >>> import eagerflow as ef
        >>> shapes_of([ef.ones([2, 3]), ef.ones([4])])
        [TensorShape([2, 3]), TensorShape([4])]
    """
    def shape(x):
        s = getattr(x, "shape", None)
        return TensorShape(s) if s is not None and not isinstance(x, (int, float)) else None

    if isinstance(structure, tuple):
        structure = list(structure)
    return _map_structure(shape, structure)


def _as_shape(shape):
    """A TensorShape (or nested list of them) from a tuple/list/TensorShape input shape."""
    if isinstance(shape, TensorShape):
        return shape
    if isinstance(shape, dict):
        return {k: _as_shape(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)) and shape and all(
            isinstance(s, (list, tuple, TensorShape)) or s is None for s in shape):
        if any(s is not None for s in shape):
            return [_as_shape(s) if s is not None else None for s in shape]
    return TensorShape(shape)
