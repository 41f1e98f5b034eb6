"""Arrays and errors as worker-service messages, and back.

A tensor travels as its dtype name, its shape and its raw little-endian bytes. Decoding is
the untrusted side: the dtype must be a numeric eagerflow dtype, the rank and every dimension
bounded, and the byte count must equal what the shape and dtype declare before any array is
made (the payload is then viewed, not parsed). Nothing on the wire is pickled.

Example:
    >>> import numpy as np
    >>> from eagerflow.distribute.rpc import wire
    >>> wire.decode_tensor(wire.encode_tensor(np.arange(3.0)))
    array([0., 1., 2.])
"""

from __future__ import annotations

import sys

import numpy as np

from eagerflow import dtypes as dtypes_lib
from eagerflow import errors

__all__ = ["encode_tensor", "decode_tensor", "encode_error", "decode_error", "pb",
           "WithTensors"]

MAX_RANK = 32
_pb = None


def pb():
    """The generated message module, imported on first use."""
    global _pb
    if _pb is None:
        from eagerflow.distribute.rpc import worker_service_pb2

        _pb = worker_service_pb2
    return _pb


def _wire_array(array):
    """``(dtype, C-contiguous little-endian host array)`` of an array that may travel."""
    if hasattr(array, "__cuda_array_interface__") and hasattr(array, "get"):
        array = array.get()
    array = np.asarray(array)
    dtype = dtypes_lib.from_numpy(array.dtype)
    if dtype is None or dtype is dtypes_lib.string:
        raise errors.InvalidArgumentError(
            None, "SendTensor", "Cannot send an array of dtype %s between tasks: only numeric "
            "and bool tensors travel." % array.dtype)
    if array.dtype.itemsize > 1 and (array.dtype.byteorder == ">" or (
            array.dtype.byteorder == "=" and sys.byteorder == "big")):
        array = array.byteswap()
    # (np.ascontiguousarray would make a 0-d array 1-d.)
    return dtype, array if array.flags.c_contiguous else array.copy(order="C")


def encode_tensor(array, msg=None):
    """Fills (or makes) a TensorPayload holding ``array``.

    Raises:
        InvalidArgumentError: The array's dtype cannot travel (strings, objects).
    """
    if msg is None:
        msg = pb().TensorPayload()
    dtype, array = _wire_array(array)
    msg.dtype = dtype.name
    msg.shape.extend(array.shape)
    msg.content = array.tobytes()
    return msg


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class WithTensors:
    """A message plus tensors for one of its TensorPayload fields, serialized in one copy.

    ``SerializeToString()`` gives exactly the bytes of the message with each array appended
    as a TensorPayload to field ``field_number`` (protobuf concatenates fields, so the
    receiver parses an ordinary message), but each array's bytes are copied once, straight
    into the output, instead of into the message and again into its serialization.

    Args:
        msg: The message, without those TensorPayloads.
        field_number: The TensorPayload field (repeated or singular) they belong to.
        arrays: The arrays.
    """

    __slots__ = ("msg", "_parts")

    def __init__(self, msg, field_number, arrays):
        self.msg = msg
        TensorPayload = pb().TensorPayload
        tag = _varint(field_number << 3 | 2)
        parts = []
        for array in arrays:
            dtype, array = _wire_array(array)
            header = TensorPayload(dtype=dtype.name, shape=array.shape).SerializeToString()
            raw = memoryview(array.reshape(-1)).cast("B")
            content = b"\x1a" + _varint(len(raw))  # TensorPayload.content: field 3, bytes
            parts += [tag, _varint(len(header) + len(content) + len(raw)), header, content, raw]
        self._parts = parts

    def SerializeToString(self):  # noqa: N802 - the protobuf method name grpc calls
        return b"".join([self.msg.SerializeToString()] + self._parts)


def decode_tensor(msg, what="a tensor"):
    """The array a TensorPayload holds (a fresh, writable array).

    Args:
        msg: A TensorPayload from the wire.
        what: What the tensor is, for the error message.

    Raises:
        DataLossError: The dtype is unknown, the shape is invalid, or the byte count does
            not match the declared dtype and shape.
    """
    try:
        dtype = dtypes_lib.as_dtype(msg.dtype)
    except TypeError:
        dtype = None
    if dtype is None or dtype is dtypes_lib.string:
        raise errors.DataLossError(
            None, "RecvTensor", "%s arrived with dtype %r, which is not a numeric eagerflow "
            "dtype." % (what, msg.dtype[:40]))
    shape = tuple(msg.shape)
    if len(shape) > MAX_RANK or any(d < 0 for d in shape):
        raise errors.DataLossError(
            None, "RecvTensor", "%s arrived with the invalid shape %s." % (what, list(shape)[:8]))
    np_dtype = dtype.np_dtype
    expected = np_dtype.itemsize  # Python ints: a huge declared shape cannot wrap around
    for d in shape:
        expected *= d
    if len(msg.content) != expected:
        raise errors.DataLossError(
            None, "RecvTensor", "%s declared %s%s (%d bytes) but holds %d bytes." % (
                what, dtype.name, list(shape), expected, len(msg.content)))
    array = np.frombuffer(msg.content, dtype=np_dtype).reshape(shape).copy()
    if sys.byteorder == "big" and np_dtype.itemsize > 1:
        array = array.byteswap()
    return array


def encode_error(exc, task, msg):
    """Fills a RemoteError from an exception raised on ``task``.

    The error's own ``task`` (the unreachable task, for an UnavailableError raised while
    talking to another task) is kept: it says which task failed.
    """
    msg.code = int(getattr(exc, "error_code", errors.UNKNOWN))
    msg.type = type(exc).__name__
    msg.message = str(exc)
    msg.task = getattr(exc, "task", None) or task
    return msg


def decode_error(msg, prefix=""):
    """The eagerflow error a RemoteError describes (UnknownError for a plain Python error),
    its message naming the task it came from."""
    try:
        cls = errors.exception_type_from_error_code(int(msg.code))
    except KeyError:
        cls = errors.UnknownError
    text = msg.message
    if cls is errors.UnknownError and msg.type:
        text = "%s: %s" % (msg.type, text)
    error = cls(None, None, "%s(task %s) %s" % (prefix, msg.task, text))
    error.task = msg.task
    error.remote_type = msg.type
    return error
