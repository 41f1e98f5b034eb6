"""Dataset utilities: ``image_dataset_from_directory``, ``text_dataset_from_directory``,
``timeseries_dataset_from_array``, ``pad_sequences``, ``split_dataset`` and ``get_file``.

The ``*_from_directory`` functions follow Keras: one sub-directory per class (sorted
names are the class names), labels ``"inferred"`` as ints, ``"categorical"`` or
``"binary"``, an optional seeded shuffle and ``validation_split`` with ``subset``.

Example:
    >>> from eagerflow.keras import utils
    >>> utils.pad_sequences([[1, 2, 3], [4]], maxlen=2).tolist()
    [[2, 3], [0, 4]]
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

import eagerflow as ef
from eagerflow import errors

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory",
           "timeseries_dataset_from_array", "pad_sequences", "split_dataset", "get_file"]

_IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")


def _index_directory(directory, labels, formats, class_names, shuffle, seed):
    if not os.path.isdir(directory):
        raise errors.NotFoundError(None, "dataset_from_directory",
                                   "%s is not a directory." % directory)
    if labels == "inferred":
        found = sorted(d for d in os.listdir(directory)
                       if os.path.isdir(os.path.join(directory, d)))
        if class_names is not None:
            if sorted(class_names) != sorted(found) and set(class_names) - set(found):
                raise ValueError("class_names %s do not match the sub-directories %s."
                                 % (list(class_names), found))
            found = list(class_names)
        paths, ids = [], []
        for i, name in enumerate(found):
            for root, _, files in sorted(os.walk(os.path.join(directory, name))):
                for f in sorted(files):
                    if f.lower().endswith(formats):
                        paths.append(os.path.join(root, f))
                        ids.append(i)
        names = found
    else:
        paths = sorted(os.path.join(r, f) for r, _, fs in os.walk(directory) for f in fs
                       if f.lower().endswith(formats))
        ids, names = (list(labels) if labels is not None else None), None
        if ids is not None and len(ids) != len(paths):
            raise ValueError("labels has %d entries but %d files were found in %s."
                             % (len(ids), len(paths), directory))
    if shuffle:
        order = np.random.default_rng(seed if seed is not None else
                                      np.random.SeedSequence().entropy).permutation(len(paths))
        paths = [paths[i] for i in order]
        if ids is not None:
            ids = [ids[i] for i in order]
    return paths, ids, names


def _split(items, validation_split, subset, seed):
    if validation_split is None:
        if subset is not None:
            raise ValueError("subset needs validation_split.")
        return items
    if not 0 < validation_split < 1:
        raise ValueError("validation_split must be in (0, 1), got %r." % validation_split)
    n_val = int(validation_split * len(items[0]))
    if subset == "training":
        return [x[:len(x) - n_val] if x is not None else None for x in items]
    if subset == "validation":
        return [x[len(x) - n_val:] if x is not None else None for x in items]
    raise ValueError("subset must be 'training' or 'validation' with validation_split, got "
                     "%r." % subset)


def _label_tensor(ids, label_mode, num_classes):
    ids = np.asarray(ids, np.int32)
    if label_mode == "int":
        return ids
    if label_mode == "categorical":
        return np.eye(num_classes, dtype=np.float32)[ids]
    if label_mode == "binary":
        if num_classes != 2:
            raise ValueError("label_mode='binary' needs exactly 2 classes, got %d."
                             % num_classes)
        return ids.astype(np.float32).reshape(-1, 1)
    raise ValueError("label_mode must be 'int', 'categorical', 'binary' or None, got %r."
                     % label_mode)


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """A Dataset of ``(images, labels)`` batches from class sub-directories of image files.

    Images are decoded (PNG, JPEG, BMP, GIF), resized to ``image_size`` and returned as
    float32 in [0, 255], as Keras does. ``class_names`` lists the classes in label order.
    """
    if seed is None and validation_split is not None and shuffle:
        raise ValueError("give a seed with validation_split and shuffle, so the training "
                         "and validation subsets do not overlap.")
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError("color_mode must be 'rgb', 'rgba' or 'grayscale', got %r."
                         % color_mode)
    paths, ids, names = _index_directory(directory, labels, _IMAGE_EXTS, class_names,
                                         shuffle, seed)
    paths, ids = _split([paths, ids], validation_split, subset, seed)
    if verbose:
        print("Found %d files%s." % (len(paths), "" if names is None else
                                     " belonging to %d classes" % len(names)))
    size = [int(s) for s in image_size]

    def load(path):
        img = ef.io.decode_image(ef.io.read_file(path), channels=channels)
        if crop_to_aspect_ratio:
            return ef.keras.layers.Resizing(size[0], size[1], interpolation,
                                            crop_to_aspect_ratio=True)(img)
        return ef.image.resize(img, size, method=interpolation)

    ds = ef.data.Dataset.from_tensor_slices(np.array(paths, dtype=object)).map(load)
    if ids is not None and label_mode is not None:
        ds = ef.data.Dataset.zip((ds, ef.data.Dataset.from_tensor_slices(
            _label_tensor(ids, label_mode, len(names) if names else max(ids) + 1))))
    if batch_size is not None:
        ds = ds.batch(batch_size)
    ds.class_names = names
    ds.file_paths = paths
    return ds


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None,
                                shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, verbose=True):
    """A Dataset of ``(texts, labels)`` batches from class sub-directories of ``.txt`` files."""
    if seed is None and validation_split is not None and shuffle:
        raise ValueError("give a seed with validation_split and shuffle.")
    paths, ids, names = _index_directory(directory, labels, (".txt",), class_names, shuffle,
                                         seed)
    paths, ids = _split([paths, ids], validation_split, subset, seed)
    if verbose:
        print("Found %d files%s." % (len(paths), "" if names is None else
                                     " belonging to %d classes" % len(names)))

    def load(path):
        text = ef.io.read_file(path)
        return ef.strings.substr(text, 0, max_length) if max_length is not None else text

    ds = ef.data.Dataset.from_tensor_slices(np.array(paths, dtype=object)).map(load)
    if ids is not None and label_mode is not None:
        ds = ef.data.Dataset.zip((ds, ef.data.Dataset.from_tensor_slices(
            _label_tensor(ids, label_mode, len(names) if names else max(ids) + 1))))
    if batch_size is not None:
        ds = ds.batch(batch_size)
    ds.class_names = names
    ds.file_paths = paths
    return ds


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Sliding windows over ``data`` (and the target at each window's start), batched.

    Example:
        >>> import numpy as np
        >>> from eagerflow.keras import utils
        >>> ds = utils.timeseries_dataset_from_array(np.arange(6), None, 3, batch_size=8)
        >>> next(iter(ds)).numpy().tolist()
        [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]
    """
    data = np.asarray(data)
    start = start_index or 0
    end = len(data) if end_index is None else end_index
    span = (sequence_length - 1) * sampling_rate + 1
    starts = np.arange(start, end - span + 1, sequence_stride)
    if shuffle:
        np.random.default_rng(seed).shuffle(starts)
    windows = starts[:, None] + np.arange(sequence_length)[None, :] * sampling_rate
    ds = ef.data.Dataset.from_tensor_slices(data[windows] if len(starts) else
                                            np.zeros((0, sequence_length) + data.shape[1:],
                                                     data.dtype))
    if targets is not None:
        targets = np.asarray(targets)
        ds = ef.data.Dataset.zip((ds, ef.data.Dataset.from_tensor_slices(targets[starts])))
    return ds.batch(batch_size) if batch_size is not None else ds


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pads (or truncates) lists of sequences to one length, as a numpy array (Keras's)."""
    if padding not in ("pre", "post") or truncating not in ("pre", "post"):
        raise ValueError("padding and truncating must be 'pre' or 'post'.")
    seqs = [list(s) for s in sequences]
    maxlen = max((len(s) for s in seqs), default=0) if maxlen is None else int(maxlen)
    inner = ()
    for s in seqs:
        if s:
            inner = np.asarray(s).shape[1:]
            break
    is_str = np.dtype(dtype).kind in "USO"
    out = np.full((len(seqs), maxlen) + inner, value, dtype=object if is_str else dtype)
    for i, s in enumerate(seqs):
        if not s:
            continue
        s = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        arr = np.asarray(s, dtype=out.dtype)
        if padding == "post":
            out[i, :len(arr)] = arr
        else:
            out[i, maxlen - len(arr):] = arr
    return out


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Splits a Dataset (or arrays) into two datasets by size or fraction."""
    if not isinstance(dataset, ef.data.Dataset):
        dataset = ef.data.Dataset.from_tensor_slices(dataset)
    elements = list(dataset)
    n = len(elements)
    if shuffle:
        order = np.random.default_rng(seed).permutation(n)
        elements = [elements[i] for i in order]

    def size_of(v):
        return None if v is None else (int(round(v * n)) if isinstance(v, float) else int(v))
    left, right = size_of(left_size), size_of(right_size)
    if left is None and right is None:
        raise ValueError("split_dataset: give left_size or right_size.")
    left = n - right if left is None else left
    right = n - left if right is None else right
    if left < 0 or right < 0 or left + right > n:
        raise ValueError("split_dataset: sizes %d + %d do not fit %d elements."
                         % (left, right, n))
    return (ef.data.experimental.from_list(elements[:left]) if left else
            dataset.take(0), ef.data.experimental.from_list(elements[left:left + right])
            if right else dataset.take(0))


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """The cached path of a downloaded file (Keras's ``get_file``).

    A file already in the cache (``~/.keras/<cache_subdir>`` or ``cache_dir``) is returned
    after its hash is checked, if one is given. This build never downloads: a file that is
    not cached raises ``UnavailableError`` naming the path to place it at.
    """
    if fname is None:
        if origin is None:
            raise ValueError("get_file needs fname or origin.")
        fname = os.path.basename(origin.split("?")[0])
    base = os.path.expanduser(cache_dir or os.path.join("~", ".keras"))
    path = os.path.join(base, cache_subdir, fname)
    if os.path.exists(path) and not force_download:
        want = file_hash or md5_hash
        if want:
            algo = "sha256" if (hash_algorithm == "auto" and len(want) == 64) or \
                hash_algorithm == "sha256" else "md5"
            h = hashlib.new(algo)
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            if h.hexdigest() != want:
                raise errors.DataLossError(
                    None, "get_file", "get_file: %s has %s %s, expected %s; delete it to "
                    "fetch it again." % (path, algo, h.hexdigest(), want))
        return path
    raise errors.UnavailableError(
        None, "get_file", "get_file: %s is not cached and this environment does not "
        "download (no network access). Download %s yourself and save it as %s."
        % (fname, origin or fname, path))
