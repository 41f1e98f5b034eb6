"""Regular expressions on strings: ``regex_full_match`` and ``regex_replace`` (RE2-like
syntax through Python's ``re``; patterns are compiled once and cached).
"""

from __future__ import annotations

import re

import numpy as np

from eagerflow import dtypes as d
from eagerflow import errors
from eagerflow.ops import registry
from eagerflow.ops.dispatch import execute
from eagerflow.ops.registry import AbstractValue
from eagerflow.ops.strings.string_ops import _values
from eagerflow.ops.strings.string_ops import (
    STRING,
    _SWEEP,
    _as_bytes,
    _map,
    _same,
)

__all__ = ["regex_full_match", "regex_replace"]


# Loaded on first use (eagerflow.strings): not by ``import eagerflow``.
LAZY = True

EXPORTS = {
    "strings": ["regex_full_match", "regex_replace"],
}


# -- regular expressions -----------------------------------------------------------------------
def _compile(pattern):
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise errors.InvalidArgumentError(
            None, None, "invalid regular expression %r: %s" % (pattern, exc)) from None


def _full_match_kernel(xp):
    def kernel(x, *, pattern):
        rx = _compile(pattern)
        return _map(lambda v: rx.fullmatch(v) is not None, x, np.bool_)
    return kernel


def _regex_samples(rng, dtype):
    x = np.array([b"abc", b"a1", b"", b"123", b"hello world"], dtype=object)
    return [((x,), {"pattern": b"[a-z]+"}), ((x,), {"pattern": b"\\d*"}),
            ((x[:1].reshape(()),), {"pattern": b"a.c"})]


REGEX_FULL_MATCH = registry.primitive(
    "StaticRegexFullMatch", _full_match_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, pattern: np.vectorize(
        lambda v: bool(re.match(b"(?:" + pattern + b")\\Z", v)), otypes=[np.bool_])(x),
    samples=_regex_samples, sweep_dtypes=_SWEEP,
    shape_fn=lambda x, **a: AbstractValue(x.shape, d.bool),
    bad_samples=lambda rng: [((np.array([b"a"], object),), {"pattern": b"(["},
                              errors.InvalidArgumentError)])


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches ``pattern`` (``tf.strings.regex_full_match``).

    Patterns are Python regular expressions over bytes; for the RE2 syntax TF patterns use
    (classes, groups, repetition, anchors) they behave the same.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.regex_full_match(["ab1", "abc"], "[a-z]+").numpy().tolist()
        [False, True]
    """
    return execute(REGEX_FULL_MATCH, (_values(input),),
                   {"pattern": _as_bytes(pattern, "pattern")})


def _replace_kernel(xp):
    def kernel(x, *, pattern, rewrite, replace_global):
        rx = _compile(pattern)
        count = 0 if replace_global else 1
        return _map(lambda v: rx.sub(rewrite, v, count=count), x)
    return kernel


def _replace_samples(rng, dtype):
    x = np.array([b"hello world", b"aaa", b"", b"a1b22"], dtype=object)
    return [((x,), {"pattern": b"o", "rewrite": b"0", "replace_global": True}),
            ((x,), {"pattern": b"a", "rewrite": b"b", "replace_global": False}),
            ((x,), {"pattern": b"(\\d+)", "rewrite": b"<\\1>", "replace_global": True})]


REGEX_REPLACE = registry.primitive(
    "StaticRegexReplace", _replace_kernel, dtypes=STRING, family="strings",
    reference=lambda x, *, pattern, rewrite, replace_global: np.vectorize(
        lambda v: re.sub(pattern, rewrite, v, count=0 if replace_global else 1),
        otypes=[object])(x),
    samples=_replace_samples, sweep_dtypes=_SWEEP, shape_fn=_same)


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces matches of ``pattern`` with ``rewrite`` (``tf.strings.regex_replace``).

    ``\\1`` in ``rewrite`` inserts the first group, as in RE2.

    Example:
        >>> import eagerflow as ef
        >>> ef.strings.regex_replace("a1b22", r"\\d+", "#").numpy()
        b'a#b#'
    """
    return execute(REGEX_REPLACE, (_values(input),),
                   {"pattern": _as_bytes(pattern, "pattern"),
                    "rewrite": _as_bytes(rewrite, "rewrite"),
                    "replace_global": bool(replace_global)})


# Run on a RaggedTensor's flat values (see eagerflow.ops.composite).
for _prim in (REGEX_FULL_MATCH, REGEX_REPLACE,):
    _prim.elementwise = True
