"""Keras preprocessing layers for numbers and text: Normalization, Discretization,
CategoryEncoding, Hashing, StringLookup, IntegerLookup and TextVectorization.

Layers with state learned from data have ``adapt(data)``, taking arrays, lists or a
``Dataset``. Their state is part of the layer: statistics are non-trainable weights,
vocabularies are in ``get_config()``, so models holding them save and load with it.
Vocabularies order tokens as Keras does: by count, ties in reverse token order.

Example:
    >>> import numpy as np
    >>> from eagerflow.keras import layers
    >>> norm = layers.Normalization()
    >>> norm.adapt(np.array([[0.0], [2.0]]))
    >>> norm(np.array([[1.0], [3.0]])).numpy().ravel().tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import collections
import math
import reprlib

import numpy as np

import eagerflow as ef
from eagerflow import errors
from eagerflow.keras.layers.base import Layer
from eagerflow.ops.ragged.ragged_ops import table_lookup

_show = reprlib.repr  # bounded: a hostile argument cannot make the message loop

__all__ = ["Normalization", "Discretization", "CategoryEncoding", "Hashing", "StringLookup",
           "IntegerLookup", "TextVectorization"]

_EPSILON = 1e-7  # keras.backend.epsilon()


def _batches(data, batch_size=None, steps=None):
    """numpy batches of ``data`` (array-like or Dataset), for adapt."""
    if isinstance(data, ef.data.Dataset):
        for i, element in enumerate(data):
            if steps is not None and i >= steps:
                return
            if isinstance(element, tuple):
                element = element[0]
            yield _host(element)
        return
    arr = _host(data)
    if batch_size is None:
        yield arr
        return
    for i in range(0, len(arr), batch_size):
        yield arr[i:i + batch_size]


def _host(x):
    if isinstance(x, ef.RaggedTensor):
        return x.flat_values.numpy()
    if hasattr(x, "_value") and getattr(x, "dtype", None) is ef.string:
        return np.asarray(x._value)
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    if isinstance(x, (list, tuple)) and x and isinstance(_first(x), (str, bytes)):
        return np.asarray(ef.constant(x)._value)
    return np.asarray(x)


def _first(x):
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
    return x


class Normalization(Layer):
    """Standardizes features: ``(x - mean) / max(sqrt(variance), 1e-7)``.

    ``adapt`` computes the mean and variance of each index of ``axis`` over all other
    axes (population variance), as Keras does; or pass ``mean`` and ``variance``.

    Args:
        axis: The feature axis or axes kept separate (None: one scalar mean/variance).
        mean: Known means (broadcast to the feature shape).
        variance: Known variances.
        invert: Apply the inverse transform instead.
        **kwargs: Base Layer arguments.
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither.")
        self.input_mean = None if mean is None else np.asarray(mean, np.float32).tolist()
        self.input_variance = None if variance is None else np.asarray(
            variance, np.float32).tolist()
        self.invert = bool(invert)
        self.mean = self.variance = None

    def _feature_shape(self, shape):
        rank = len(shape)
        if any(not isinstance(a, int) or not -rank <= a < rank for a in self.axis):
            raise ValueError("Normalization: axis %s is out of range for inputs of rank %d "
                             "(shape %s)." % (_show(self.axis), rank, _show(shape)))
        axes = [a % rank for a in self.axis]
        return [shape[i] if i in axes else 1 for i in range(rank)], axes

    def build(self, input_shape):
        shape = list(ef.TensorShape(input_shape).as_list())
        fshape, axes = self._feature_shape(shape)
        if any(fshape[a] is None for a in axes):
            raise ValueError("Normalization: the feature axis %s must have a known size, got "
                             "input shape %s." % (self.axis, shape))
        # The statistics are stored without the batch axis's 1, as Keras stores them.
        self.mean = self.add_weight("mean", shape=fshape, initializer="zeros",
                                    trainable=False)
        self.variance = self.add_weight("variance", shape=fshape, initializer="ones",
                                        trainable=False)
        if self.input_mean is not None:
            self.mean.assign(np.broadcast_to(np.asarray(self.input_mean, np.float32), fshape))
            self.variance.assign(np.broadcast_to(np.asarray(self.input_variance, np.float32),
                                                 fshape))
        super().build(input_shape)

    def adapt(self, data, batch_size=None, steps=None):
        """Computes the mean and variance of ``data`` (arrays or a Dataset)."""
        total = mean = m2 = None
        for batch in _batches(data, batch_size, steps):
            batch = np.asarray(batch, np.float64)
            if batch.ndim == 1 and self.axis and self.axis != (-1,) or batch.ndim == 0:
                batch = batch.reshape(-1, 1)
            if self.mean is None:
                self.build((None,) + batch.shape[1:])
            fshape, axes = self._feature_shape(list(batch.shape))
            reduce = tuple(i for i in range(batch.ndim) if i not in axes)
            n = int(np.prod([batch.shape[i] for i in reduce]))
            b_mean = batch.mean(axis=reduce, keepdims=True)
            b_m2 = ((batch - b_mean) ** 2).sum(axis=reduce, keepdims=True)
            if total is None:
                total, mean, m2 = n, b_mean, b_m2
            else:  # Chan's parallel update of mean and sum of squares
                delta = b_mean - mean
                new_total = total + n
                mean = mean + delta * n / new_total
                m2 = m2 + b_m2 + delta ** 2 * total * n / new_total
                total = new_total
        if total is None:
            raise ValueError("Normalization.adapt: the data is empty.")
        shape = self.mean.shape.as_list()
        self.mean.assign(mean.reshape(shape).astype(np.float32))
        self.variance.assign((m2 / total).reshape(shape).astype(np.float32))

    def call(self, inputs):
        x = ef.convert_to_tensor(inputs)
        if x.dtype is not self.mean.dtype:
            x = ef.cast(x, self.mean.dtype)
        std = ef.maximum(ef.sqrt(self.variance), _EPSILON)
        if self.invert:
            return x * std + self.mean
        return (x - self.mean) / std

    def get_config(self):
        config = super().get_config()
        config.update({"axis": list(self.axis), "mean": self.input_mean,
                       "variance": self.input_variance, "invert": self.invert})
        return config


class Discretization(Layer):
    """Buckets numbers by ``bin_boundaries``: bucket ``i`` holds ``[b[i-1], b[i])``.

    ``adapt`` picks ``num_bins - 1`` boundaries at the data's quantiles.
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, **kwargs):
        super().__init__(**kwargs)
        if bin_boundaries is None and num_bins is None:
            raise ValueError("Discretization: give bin_boundaries or num_bins.")
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in
                                                                   bin_boundaries]
        self.num_bins = num_bins
        self.epsilon = epsilon
        if output_mode not in ("int", "one_hot", "multi_hot", "count"):
            raise ValueError("Discretization: unknown output_mode %s." % _show(output_mode))
        self.output_mode = output_mode

    def adapt(self, data, batch_size=None, steps=None):
        values = np.concatenate([np.asarray(b, np.float64).ravel()
                                 for b in _batches(data, batch_size, steps)])
        qs = np.linspace(0, 1, int(self.num_bins) + 1)[1:-1]
        self.bin_boundaries = np.quantile(values, qs).tolist()

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise errors.FailedPreconditionError(
                None, "Discretization", "Discretization needs bin_boundaries or adapt() first.")
        x = ef.convert_to_tensor(inputs)
        bounds = ef.constant(np.asarray(self.bin_boundaries, x.dtype.as_numpy_dtype
                                        if x.dtype.is_floating else np.float64))
        x = x if x.dtype.is_floating else ef.cast(x, ef.float64)
        idx = ef.reduce_sum(ef.cast(ef.expand_dims(x, -1) >= bounds, ef.int64), axis=-1)
        if self.output_mode == "int":
            return idx
        return _encode(idx, len(self.bin_boundaries) + 1, self.output_mode)

    def get_config(self):
        config = super().get_config()
        config.update({"bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins,
                       "epsilon": self.epsilon, "output_mode": self.output_mode})
        return config


def _encode(indices, depth, mode, weights=None):
    """one_hot / multi_hot / count / tf_idf encodings of int indices (last axis reduced)."""
    idx = ef.convert_to_tensor(indices)
    if mode == "one_hot":
        return ef.one_hot(idx, depth)
    if idx.ndim == 0:
        idx = ef.reshape(idx, [1])
    if idx.ndim == 1 and mode != "one_hot":
        idx = ef.expand_dims(idx, 0) if mode != "int" else idx
        squeeze = True
    else:
        squeeze = False
    hot = ef.one_hot(idx, depth)  # [..., n, depth]; out-of-range ids give zero rows
    counts = ef.reduce_sum(hot, axis=-2)
    if mode == "multi_hot":
        out = ef.cast(counts > 0, ef.float32)
    elif mode == "count":
        out = counts
    elif mode == "tf_idf":
        out = counts * ef.constant(np.asarray(weights, np.float32))
    else:
        raise ValueError("unknown output_mode %s" % _show(mode))
    return out[0] if squeeze else out


class CategoryEncoding(Layer):
    """Encodes integer ids as one-hot, multi-hot or count vectors of ``num_tokens``."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if num_tokens is None or int(num_tokens) < 1:
            raise ValueError("CategoryEncoding: num_tokens must be a positive int, got %s."
                             % _show(num_tokens))
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise ValueError("CategoryEncoding: unknown output_mode %s." % _show(output_mode))
        self.num_tokens = int(num_tokens)
        self.output_mode = output_mode

    def call(self, inputs, count_weights=None):
        x = ef.convert_to_tensor(inputs)
        values = np.asarray(x.numpy()) if type(x) is ef.Tensor else None  # eager only
        if values is not None and values.size and (values.min() < 0 or
                                                   values.max() >= self.num_tokens):
            raise errors.InvalidArgumentError(
                None, "CategoryEncoding", "CategoryEncoding: ids must be in [0, %d), got "
                "values in [%d, %d]." % (self.num_tokens, values.min(), values.max()))
        if self.output_mode == "one_hot" and x.ndim >= 1 and x.shape[-1] == 1:
            x = ef.squeeze(x, -1)
        return _encode(x, self.num_tokens, self.output_mode)

    def get_config(self):
        config = super().get_config()
        config.update({"num_tokens": self.num_tokens, "output_mode": self.output_mode})
        return config


class Hashing(Layer):
    """Hashes values into ``num_bins`` buckets, as Keras does.

    Without ``salt`` the hash is FarmHash Fingerprint64 (``tf.strings.to_hash_bucket_fast``);
    with one it is SipHash-2-4 keyed by the salt (``tf.strings.to_hash_bucket_strong``), so
    the buckets depend on a secret. Numbers are hashed as their decimal strings (Keras
    converts them with ``as_string``). ``mask_value``, if given, maps to 0 and the other
    values to ``[1, num_bins)``.

    Args:
        num_bins: The number of buckets, the mask bucket included.
        mask_value: A value that maps to bucket 0 (None: no mask).
        salt: None, an integer (used as both key words, as Keras does) or two integers:
            the 128-bit SipHash key.
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
        sparse: Unused (dense outputs only).

    Example:
        >>> import eagerflow as ef
        >>> layer = ef.keras.layers.Hashing(num_bins=3, salt=133)
        >>> layer([["A"], ["B"], ["C"]]).numpy().ravel().tolist()  # TF gives the same
        [0, 0, 2]
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int",
                 sparse=False, **kwargs):
        super().__init__(**kwargs)
        self.num_bins = int(num_bins)
        self.mask_value = mask_value
        self.salt = _salt_key(salt)
        self.output_mode = output_mode

    def call(self, inputs):
        values = ef.convert_to_tensor(inputs)
        masked = self.mask_value is not None and self.num_bins > 1
        if masked:  # compared before hashing, in the input's own dtype (as Keras)
            mask = ef.equal(values, ef.constant(self.mask_value, dtype=values.dtype))
        x = values if values.dtype is ef.string else ef.strings.as_string(values)
        bins = self.num_bins - 1 if masked else self.num_bins
        if self.salt is None:
            out = ef.strings.to_hash_bucket_fast(x, bins)
        else:
            out = ef.strings.to_hash_bucket_strong(x, bins, key=self.salt)
        if masked:
            out = ef.where(mask, ef.zeros_like(out), out + 1)
        if self.output_mode == "int":
            return out
        return _encode(out, self.num_bins, self.output_mode)

    def get_config(self):
        config = super().get_config()
        config.update({"num_bins": self.num_bins, "mask_value": self.mask_value,
                       "salt": None if self.salt is None else list(self.salt),
                       "output_mode": self.output_mode})
        return config


def _salt_key(salt):
    """Keras's rule: an integer salt is both SipHash key words; two integers are the key."""
    if salt is None:
        return None
    if isinstance(salt, (bool, np.bool_)):
        salt = None
    elif isinstance(salt, (int, np.integer)):
        return (int(salt), int(salt))
    elif isinstance(salt, (list, tuple)) and len(salt) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in salt):
        return (int(salt[0]), int(salt[1]))
    raise ValueError("Hashing: `salt` must be None, an integer or a list of 2 integers, got "
                     "%r." % (salt,))


class _Docs:
    """Documents already split into tokens (TextVectorization hands these to its lookup)."""

    def __init__(self, docs):
        self.docs = docs


def _ordered_vocabulary(counter, max_size):
    """Keras's order: by count descending, ties in reverse token order."""
    items = sorted(counter.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    if max_size is not None:
        items = items[:max(max_size, 0)]
    return [k for k, _ in items]


class _IndexLookup(Layer):
    """Token -> index (and back, with invert) over a vocabulary."""

    _token_kind = "string"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=None,
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 sparse=False, pad_to_max_tokens=False, **kwargs):
        super().__init__(**kwargs)
        if output_mode not in ("int", "one_hot", "multi_hot", "count", "tf_idf"):
            raise ValueError("%s: unknown output_mode %s." % (type(self).__name__,
                                                             _show(output_mode)))
        self.max_tokens = max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token = mask_token
        self.oov_token = oov_token
        self.invert = bool(invert)
        self.output_mode = output_mode
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._vocab = []
        self._idf = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # -- vocabulary -------------------------------------------------------------------------
    def _special(self):
        out = []
        if self.mask_token is not None and self.output_mode == "int":
            out.append(self.mask_token)
        out.extend([self.oov_token] * self.num_oov_indices)
        return out

    def _norm(self, token):
        return token

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (without the mask and OOV tokens) from a list or a file."""
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as f:
                vocabulary = [line.rstrip("\n") for line in f]
        vocab = [self._norm(v) for v in (vocabulary.numpy().tolist() if hasattr(
            vocabulary, "numpy") else list(vocabulary))]
        special = set(self._special())
        vocab = [v for v in vocab if v not in special]
        if len(set(vocab)) != len(vocab):
            raise ValueError("%s: the vocabulary has repeated tokens." % type(self).__name__)
        self._vocab = vocab
        self._idf = None if idf_weights is None else [float(w) for w in idf_weights]
        self._index = {v: i for i, v in enumerate(self._special_and_vocab())}

    def _special_and_vocab(self):
        return self._special() + list(self._vocab)

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens in index order (mask, OOV, then the learned ones)."""
        return self._special_and_vocab() if include_special_tokens else list(self._vocab)

    def vocabulary_size(self):
        return len(self._special_and_vocab())

    def _tokens_of(self, batch):
        return [self._norm(v) for v in np.asarray(batch).ravel().tolist()]

    def adapt(self, data, batch_size=None, steps=None):
        """Builds the vocabulary from the tokens of ``data``, most frequent first."""
        counter = collections.Counter()
        docs = 0
        doc_freq = collections.Counter()
        for batch in self._adapt_batches(data, batch_size, steps):
            for doc in batch:
                toks = self._tokens_of(doc)
                counter.update(toks)
                doc_freq.update(set(toks))
                docs += 1
        for special in self._special():
            counter.pop(special, None)
        limit = None if self.max_tokens is None else self.max_tokens - len(self._special())
        vocab = _ordered_vocabulary(counter, limit)
        idf = None
        if self.output_mode == "tf_idf":
            weights = [math.log(1 + docs / (1 + doc_freq[t])) for t in vocab]
            idf = weights
        self.set_vocabulary(vocab, idf)

    def _adapt_batches(self, data, batch_size, steps):
        if isinstance(data, _Docs):  # token lists from TextVectorization
            yield data.docs
            return
        for batch in _batches(data, batch_size, steps):
            batch = np.asarray(batch, dtype=object if batch.dtype.kind in "OSU" else None)
            yield batch.reshape(len(batch), -1) if batch.ndim else batch.reshape(1, 1)

    # -- lookup -----------------------------------------------------------------------------
    def _key(self, token):
        return token.encode("utf-8") if self._token_kind == "string" else int(token)

    def _lookup(self, x):
        """Ids of the tensor ``x``: one TableLookup op (traceable) plus the mask."""
        n_special = len(self._special())
        oov_start = n_special - self.num_oov_indices
        masked = self.mask_token is not None and self.output_mode == "int"
        invalid = (self._key(self.mask_token),) if self.mask_token is not None and \
            not masked else ()
        ids = table_lookup(x, [self._key(v) for v in self._vocab], n_special,
                           self.num_oov_indices, oov_start, invalid)
        if masked:
            ids = ef.where(ef.equal(x, self._key(self.mask_token)), ef.zeros_like(ids), ids)
        return ids

    def call(self, inputs):
        if not hasattr(self, "_index"):
            self.set_vocabulary([])
        ragged = isinstance(inputs, ef.RaggedTensor)
        x = inputs.flat_values if ragged else ef.convert_to_tensor(
            inputs, dtype=ef.string if self._token_kind == "string" and not self.invert
            else None)
        if self._token_kind == "int" and x.dtype is not ef.int64:
            x = ef.cast(x, ef.int64)
        if self.invert:
            vocab = self._special_and_vocab()
            table = np.empty(len(vocab), dtype=object)
            table[:] = [str(t).encode() for t in vocab]
            out = ef.gather(ef.constant(table) if self._token_kind == "string" else
                            ef.constant(np.asarray(vocab, np.int64)), x)
            return inputs.with_flat_values(out) if ragged else out
        ids = self._lookup(x)
        if ragged:
            ids = inputs.with_flat_values(ids)
            if self.output_mode == "int":
                return ids
            ids = ids.to_tensor(default_value=-1)
        if self.output_mode == "int":
            return ids
        depth = self.vocabulary_size() if not self.pad_to_max_tokens else self.max_tokens
        weights = None
        if self.output_mode == "tf_idf":
            idf = self._idf or [0.0] * len(self._vocab)
            oov_idf = float(np.mean(idf)) if idf else 0.0
            weights = [oov_idf] * len(self._special()) + list(idf) + [0.0] * (
                depth - len(self._special()) - len(idf))
        return _encode(ids, depth, self.output_mode, weights)

    def get_config(self):
        config = super().get_config()
        config.update({"max_tokens": self.max_tokens, "num_oov_indices": self.num_oov_indices,
                       "mask_token": self.mask_token, "oov_token": self.oov_token,
                       "vocabulary": list(self._vocab), "idf_weights": self._idf,
                       "invert": self.invert, "output_mode": self.output_mode,
                       "pad_to_max_tokens": self.pad_to_max_tokens})
        return config


class StringLookup(_IndexLookup):
    """Maps strings to integer ids through a vocabulary (``keras.layers.StringLookup``).

    Index 0 is the OOV token ``"[UNK]"`` (after the mask token, if any); ``invert=True``
    maps ids back to strings.

    Example:
        >>> from eagerflow.keras import layers
        >>> lookup = layers.StringLookup(vocabulary=["a", "b"])
        >>> lookup(["b", "z", "a"]).numpy().tolist()
        [2, 0, 1]
    """

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, encoding="utf-8", invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, **kwargs):
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs)

    def _norm(self, token):
        return token.decode("utf-8") if isinstance(token, bytes) else str(token)

    def get_config(self):
        config = super().get_config()
        config["encoding"] = self.encoding
        return config


class IntegerLookup(_IndexLookup):
    """Maps integers to contiguous ids through a vocabulary (``keras.layers.IntegerLookup``).

    Example:
        >>> from eagerflow.keras import layers
        >>> layers.IntegerLookup(vocabulary=[12, 7])([7, 12, 99]).numpy().tolist()
        [2, 1, 0]
    """

    _token_kind = "int"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, **kwargs):
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs)

    def _norm(self, token):
        return int(token)


_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


class TextVectorization(Layer):
    """Raw strings to token ids or bag-of-words vectors (``keras.layers.TextVectorization``).

    The pipeline is Keras's: standardize (``"lower_and_strip_punctuation"`` by default),
    split (``"whitespace"``), optional n-grams, then a StringLookup (index 0 is the padding
    mask ``""`` in ``int`` mode, then ``"[UNK]"``).

    Args:
        max_tokens: Vocabulary size limit, special tokens included.
        standardize: ``"lower_and_strip_punctuation"``, ``"lower"``, ``"strip_punctuation"``,
            None, or a callable on string tensors.
        split: ``"whitespace"``, ``"character"``, None, or a callable.
        ngrams: None, an int (all n-grams up to it) or a tuple of widths.
        output_mode: ``"int"``, ``"multi_hot"``, ``"count"`` or ``"tf_idf"``.
        output_sequence_length: Pad or truncate ``int`` output to this length.
        vocabulary: A list of tokens or a file path instead of ``adapt``.
        **kwargs: Base Layer arguments.

    Example:
        >>> from eagerflow.keras import layers
        >>> tv = layers.TextVectorization(output_sequence_length=4)
        >>> tv.adapt(["the cat", "the dog"])
        >>> tv.get_vocabulary()
        ['', '[UNK]', 'the', 'dog', 'cat']
        >>> tv(["The dog!"]).numpy().tolist()
        [[2, 3, 0, 0]]
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", **kwargs):
        super().__init__(**kwargs)
        self.max_tokens = max_tokens
        self.standardize = standardize
        self.split = split
        if isinstance(ngrams, int):
            ngrams = tuple(range(1, ngrams + 1))
        self.ngrams = None if ngrams is None else tuple(int(n) for n in ngrams)
        self.output_mode = output_mode
        self.output_sequence_length = output_sequence_length
        self.pad_to_max_tokens = pad_to_max_tokens
        self.ragged = ragged
        self._lookup = StringLookup(
            max_tokens=max_tokens, mask_token="" if output_mode == "int" else None,
            output_mode=output_mode, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, name=(self.name + "_lookup"))

    def _standardize(self, x):
        s = self.standardize
        if s is None:
            return x
        if callable(s):
            return s(x)
        if s in ("lower", "lower_and_strip_punctuation"):
            x = ef.strings.lower(x)
        if s in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = ef.strings.regex_replace(x, _PUNCTUATION, "")
        return x

    def _split(self, x):
        if self.split is None:
            return ef.RaggedTensor.from_tensor(ef.expand_dims(x, -1)) if x.ndim == 1 else x
        if callable(self.split):
            return self.split(x)
        if self.split == "whitespace":
            return ef.strings.split(x)
        if self.split == "character":
            return ef.strings.unicode_split(x, "UTF-8")
        raise ValueError("TextVectorization: unknown split %s." % _show(self.split))

    def _tokens(self, inputs):
        x = ef.convert_to_tensor(inputs)
        if x.ndim == 2 and x.shape[-1] == 1:
            x = ef.squeeze(x, -1)
        if x.ndim == 0:
            x = ef.reshape(x, [1])
        tokens = self._split(self._standardize(x))
        if self.ngrams is not None:
            tokens = ef.strings.ngrams(tokens, self.ngrams, separator=" ")
        return tokens

    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (and idf weights) from raw strings or a Dataset of them."""
        docs = []
        for batch in _batches(data, batch_size, steps):
            tokens = self._tokens(ef.constant(np.asarray(batch, dtype=object).reshape(-1)))
            docs.extend(tokens.to_list())
        self._lookup.adapt(_Docs(docs))

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup.set_vocabulary(vocabulary, idf_weights)

    def call(self, inputs):
        tokens = self._tokens(inputs)
        ids = self._lookup(tokens)
        if self.output_mode != "int":
            return ids
        if self.ragged:
            return ids
        if not isinstance(ids, ef.RaggedTensor):
            return ids
        return ids.to_tensor(shape=[None, self.output_sequence_length])

    def get_config(self):
        config = super().get_config()
        config.update({"max_tokens": self.max_tokens, "standardize": self.standardize
                       if not callable(self.standardize) else None,
                       "split": self.split if not callable(self.split) else None,
                       "ngrams": list(self.ngrams) if self.ngrams else None,
                       "output_mode": self.output_mode,
                       "output_sequence_length": self.output_sequence_length,
                       "pad_to_max_tokens": self.pad_to_max_tokens,
                       "vocabulary": self._lookup.get_vocabulary(False),
                       "idf_weights": self._lookup._idf, "ragged": self.ragged})
        return config
