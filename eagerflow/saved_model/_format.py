"""The on-disk layout of a SavedModel directory: file names, envelopes, variables, manifest.

A SavedModel directory holds::

    saved_model.pb              SavedModelFile: format tag + SavedModel message + CRC-32
    variables/variables.bundle  the variable values: an ``eagerflow.io.bundle`` tensor bundle
                                (per tensor: dtype, shape, raw little-endian bytes, SHA-256)
    fingerprint.pb              Manifest: format version + size and SHA-256 of every file

Everything is protobuf or raw bytes, so reading a directory from a stranger runs no code.
Every reader checks what it reads and raises an ``eagerflow.errors`` exception naming the
file (and the tensor) on truncated, corrupted or mismatched data.

Variable values go through :func:`_write_variables` / :func:`_read_variables` only, in the
project-wide tensor bundle format (``eagerflow.io.bundle``), the same as checkpoints and
Keras weights.
"""

from __future__ import annotations

import hashlib
import os
import zlib

from eagerflow import errors

SAVED_MODEL_FILENAME = "saved_model.pb"
FINGERPRINT_FILENAME = "fingerprint.pb"
VARIABLES_DIRECTORY = "variables"
VARIABLES_BUNDLE = "variables.bundle"
# The one file holding variable values (the name error messages point at).
VARIABLES_DATA = VARIABLES_BUNDLE
MODEL_FORMAT = "eagerflow.SavedModel"
MANIFEST_FORMAT = "eagerflow.SavedModelManifest"
# Bump FORMAT_VERSION when the meaning of stored data changes; raise MIN_CONSUMER only when
# older readers would misread the new data.
FORMAT_VERSION = 1
MIN_CONSUMER = 1

_pb_module = None


def pb():
    """The generated protobuf module, imported on first use (importing eagerflow never
    loads protobuf)."""
    global _pb_module
    if _pb_module is None:
        from eagerflow.saved_model import saved_model_pb2

        _pb_module = saved_model_pb2
    return _pb_module


def data_loss(path, message):
    return errors.DataLossError(None, None, "SavedModel file %s: %s" % (path, message))


def not_found(path, message):
    return errors.NotFoundError(None, None, "SavedModel file %s: %s" % (path, message))


def read_bytes(path, root=None):
    """The bytes of a regular file of the SavedModel ``root`` (which it must stay inside)."""
    from eagerflow.io import untrusted

    if root is not None:
        untrusted.check_inside(root, path, "SavedModel file %s" % path)
    try:
        return untrusted.read_regular(path, what="SavedModel file %s" % path)
    except errors.NotFoundError:
        raise not_found(path, "the file is missing") from None


def parse(message, data, path, what):
    """Parses ``data`` into ``message``; a parse failure is a DataLossError naming ``path``."""
    try:
        message.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - DecodeError or the C parser's RuntimeError
        raise data_loss(path, "%d bytes do not parse as %s (truncated or corrupted?): %s"
                        % (len(data), what, exc)) from None
    return message


def check_versions(versions, path):
    if versions.producer <= 0:
        raise data_loss(path, "no format version (not an eagerflow SavedModel, or truncated)")
    if versions.min_consumer > FORMAT_VERSION:
        raise errors.UnimplementedError(
            None, None, "SavedModel file %s needs format version %d or newer; this eagerflow "
            "reads version %d. Upgrade eagerflow to load it."
            % (path, versions.min_consumer, FORMAT_VERSION))


# -- saved_model.pb -------------------------------------------------------------------------
def model_to_bytes(model):
    payload = model.SerializeToString(deterministic=True)
    envelope = pb().SavedModelFile(format=MODEL_FORMAT, model=payload,
                                   crc32=zlib.crc32(payload) & 0xFFFFFFFF)
    return envelope.SerializeToString(deterministic=True)


def bytes_to_model(data, path):
    if not data:
        raise data_loss(path, "the file is empty")
    envelope = parse(pb().SavedModelFile(), data, path, "a SavedModel")
    if envelope.format != MODEL_FORMAT:
        raise data_loss(path, "not an eagerflow SavedModel (format tag %r, expected %r)"
                        % (envelope.format[:40], MODEL_FORMAT))
    crc = zlib.crc32(envelope.model) & 0xFFFFFFFF
    if crc != envelope.crc32:
        raise data_loss(path, "checksum mismatch (stored %08x, computed %08x): the file is "
                        "truncated or corrupted" % (envelope.crc32, crc))
    model = parse(pb().SavedModel(), envelope.model, path, "a SavedModel")
    check_versions(model.versions, path)
    return model


def read_model(export_dir):
    path = os.path.join(export_dir, SAVED_MODEL_FILENAME)
    return bytes_to_model(read_bytes(path, export_dir), path)


# -- variables ------------------------------------------------------------------------------
def _variables_path(directory):
    return os.path.join(directory, VARIABLES_DIRECTORY, VARIABLES_BUNDLE)


def _write_variables(directory, values):
    """Writes ``{key: numpy array}`` to ``directory/variables/variables.bundle``.

    The file is an ``eagerflow.io.bundle`` tensor bundle, written atomically and fsynced.
    """
    from eagerflow.io import bundle

    os.makedirs(os.path.join(directory, VARIABLES_DIRECTORY), exist_ok=True)
    bundle.write(_variables_path(directory), values, metadata={"kind": "SavedModel variables"})


def _read_variables(directory):
    """Reads the ``{key: numpy array}`` written by :func:`_write_variables`.

    Every tensor's size and checksum is verified; failures raise ``DataLossError`` (or
    ``NotFoundError``) naming the file and the tensor.
    """
    from eagerflow.io import bundle, untrusted

    path = untrusted.check_inside(directory, _variables_path(directory))
    return bundle.BundleReader(path).read_all()


# -- manifest -------------------------------------------------------------------------------
def _digest(path, limit=None):
    """``(size, sha256)`` of a regular file, reading at most ``limit + 1`` bytes."""
    from eagerflow.io import untrusted

    h = hashlib.sha256()
    size = 0
    with untrusted.open_regular(path, "SavedModel file %s" % path) as f:
        while limit is None or size <= limit:
            block = f.read(1 << 20 if limit is None else min(1 << 20, limit + 1 - size))
            if not block:
                break
            h.update(block)
            size += len(block)
    return size, h.hexdigest()


def _files(directory):
    out = []
    for root, _, names in os.walk(directory):
        for name in names:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, directory).replace(os.sep, "/")
            if rel != FINGERPRINT_FILENAME:
                out.append(rel)
    return sorted(out)


def write_manifest(directory):
    manifest = pb().Manifest(format=MANIFEST_FORMAT)
    manifest.versions.producer = FORMAT_VERSION
    manifest.versions.min_consumer = MIN_CONSUMER
    for rel in _files(directory):
        size, sha = _digest(os.path.join(directory, rel))
        manifest.file.add(path=rel, size=size, sha256=sha)
    with open(os.path.join(directory, FINGERPRINT_FILENAME), "wb") as f:
        f.write(manifest.SerializeToString(deterministic=True))
        fsync_file(f)


def verify_manifest(directory):
    """Checks the format version and every file's size and checksum against the manifest."""
    from eagerflow.io import untrusted

    path = os.path.join(directory, FINGERPRINT_FILENAME)
    manifest = parse(pb().Manifest(), read_bytes(path, directory), path,
                     "a SavedModel manifest")
    if manifest.format != MANIFEST_FORMAT:
        raise data_loss(path, "not a SavedModel manifest (format tag %r)"
                        % manifest.format[:40])
    check_versions(manifest.versions, path)
    listed = {entry.path for entry in manifest.file}
    for required in (SAVED_MODEL_FILENAME, VARIABLES_DIRECTORY + "/" + VARIABLES_BUNDLE):
        if required not in listed:
            raise data_loss(path, "the manifest does not list %s (incomplete export)"
                            % required)
    for entry in manifest.file:
        rel = entry.path
        if rel.startswith("/") or ".." in rel.split("/"):
            raise data_loss(path, "the manifest names a file outside the directory: %r" % rel)
        full = os.path.join(directory, *rel.split("/"))
        untrusted.check_inside(directory, full, "SavedModel file %s" % full)
        if not os.path.lexists(full):
            raise not_found(full, "the file is missing (listed in %s)" % FINGERPRINT_FILENAME)
        # Never more than the manifest's size is read (a device or a growing file cannot
        # make the check read without end).
        size, sha = _digest(full, limit=entry.size)
        if size != entry.size:
            raise data_loss(full, "size %d bytes, expected %d: the file is truncated or "
                            "was changed" % (size, entry.size))
        if sha != entry.sha256:
            raise data_loss(full, "checksum mismatch (SHA-256 %s..., expected %s...): the "
                            "file is corrupted" % (sha[:12], entry.sha256[:12]))
    return manifest


# -- durability -----------------------------------------------------------------------------
def fsync_file(f):
    f.flush()
    os.fsync(f.fileno())


