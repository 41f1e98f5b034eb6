"""Serialized functions as bytes and files: a format tag and a CRC-32 around the message,
so truncated or corrupted data raises ``DataLossError`` instead of running a damaged
graph; files are written atomically.
"""

from __future__ import annotations

import os
import tempfile
import zlib

__all__ = ["proto_to_bytes", "bytes_to_proto", "serialize_concrete_function", "save_graph"]


from eagerflow.function.serialize.codec import FORMAT, _data_loss, _pb
from eagerflow.function.serialize.encode import graph_to_proto


def proto_to_bytes(saved):
    """The file form of a SavedFunction: a format tag, the message and its CRC-32."""
    payload = saved.SerializeToString(deterministic=True)
    envelope = _pb().SavedFunctionFile(format=FORMAT, function=payload,
                                       crc32=zlib.crc32(payload) & 0xFFFFFFFF)
    return envelope.SerializeToString(deterministic=True)


def bytes_to_proto(data):
    """Parses and checks bytes written by :func:`proto_to_bytes`; returns the SavedFunction.

    Raises:
        DataLossError: If the bytes are truncated, corrupted or not a serialized function.

    Example:
        >>> import eagerflow as ef
        >>> from eagerflow.function import serialize
        >>> data = serialize.serialize_concrete_function(
        ...     ef.function(lambda x: -x).get_concrete_function(ef.TensorSpec([])))
        >>> serialize.bytes_to_proto(data).signature.output[:]
        ['neg:0']
        >>> serialize.bytes_to_proto(data[:-3])
        Traceback (most recent call last):
        ...
        eagerflow.errors.DataLossError: Cannot load the serialized function: ...
    """
    pb = _pb()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("Expected the bytes of a serialized function, got %s"
                        % type(data).__name__)
    data = bytes(data)
    if not data:
        raise _data_loss("the data is empty")
    envelope = pb.SavedFunctionFile()
    try:
        envelope.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - DecodeError or the C parser's RuntimeError
        raise _data_loss("%d bytes do not parse as a serialized function (truncated or "
                         "corrupted?): %s" % (len(data), exc)) from None
    if envelope.format != FORMAT:
        raise _data_loss("the data is not a serialized eagerflow function (format tag %r, "
                         "expected %r)" % (envelope.format[:40], FORMAT))
    crc = zlib.crc32(envelope.function) & 0xFFFFFFFF
    if crc != envelope.crc32:
        raise _data_loss("checksum mismatch (stored %08x, computed %08x over %d bytes): the "
                         "data is truncated or corrupted" % (envelope.crc32, crc,
                                                             len(envelope.function)))
    saved = pb.SavedFunction()
    try:
        saved.ParseFromString(envelope.function)
    except Exception as exc:  # noqa: BLE001 - see above
        raise _data_loss("the function does not parse: %s" % exc) from None
    return saved


def serialize_concrete_function(concrete, embed_captures=True, embed_variables=False):
    """The bytes of a traced function (see :func:`graph_to_proto` for the arguments)."""
    return proto_to_bytes(graph_to_proto(concrete, embed_captures, embed_variables))


def save_graph(path, function, embed_captures=True, embed_variables=False):
    """Writes a traced function to ``path`` atomically.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    file is renamed over ``path``: a reader sees the old file or the complete new one,
    never a partial write.

    Args:
        path: The file to write.
        function: A ConcreteFunction, a Graph, a SavedFunction message or its bytes.
        embed_captures: See :func:`graph_to_proto`.
        embed_variables: See :func:`graph_to_proto`.

    Returns:
        The path written.

    Example:
        >>> import os, tempfile, eagerflow as ef
        >>> from eagerflow.function import serialize
        >>> f = ef.function(lambda x: ef.reduce_sum(x * x))
        >>> path = os.path.join(tempfile.mkdtemp(), "square_sum.efg")
        >>> _ = serialize.save_graph(path, f.get_concrete_function(ef.TensorSpec([None])))
        >>> float(serialize.load(path)(ef.constant([1.0, 2.0, 3.0])))
        14.0
    """
    if isinstance(function, (bytes, bytearray)):
        data = bytes(function)
    elif hasattr(function, "SerializeToString"):
        data = proto_to_bytes(function)
    else:
        data = serialize_concrete_function(function, embed_captures, embed_variables)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable; not every platform can open a directory
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return path
