"""Exception classes, named and arranged as in TensorFlow's ``tf.errors``.

Every failure that eagerflow detects raises one of these, with a message that names the
operation, the shapes, dtypes and device involved, and what to do about it.

Example:
    >>> import eagerflow as ef
    >>> try:
    ...     ef.add(ef.constant(1.0), ef.constant(1))
    ... except ef.errors.InvalidArgumentError as e:
    ...     print(type(e).__name__)
    InvalidArgumentError
"""

from __future__ import annotations

__all__ = [
    "OpError",
    "CancelledError",
    "UnknownError",
    "InvalidArgumentError",
    "DeadlineExceededError",
    "NotFoundError",
    "AlreadyExistsError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "FailedPreconditionError",
    "AbortedError",
    "OutOfRangeError",
    "UnimplementedError",
    "InternalError",
    "UnavailableError",
    "DataLossError",
    "UnauthenticatedError",
    "OperatorNotAllowedInGraphError",
]

# Canonical status codes, the same numbers TensorFlow and gRPC use.
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """Base class of every eagerflow runtime error.

    Args:
        node_def: Unused, kept for TF signature compatibility (may be None).
        op: The name of the operation that failed, or None.
        message: A human-readable description of the failure and its fix.
        error_code: One of the canonical status codes in this module.
    """

    error_code = UNKNOWN

    def __init__(self, node_def=None, op=None, message="", error_code=None, *args):
        # Allow the short form ``InvalidArgumentError("message")``.
        if node_def is not None and op is None and not message and isinstance(node_def, str):
            message, node_def = node_def, None
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message
        if error_code is not None:
            self.error_code = error_code

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (type(self), (None, self.op, self.message))


def _make(name, code, base=OpError, doc=""):
    cls = type(name, (base,), {"error_code": code, "__doc__": doc})
    cls.__module__ = __name__
    return cls


CancelledError = _make("CancelledError", CANCELLED, doc="An operation was cancelled.")
UnknownError = _make("UnknownError", UNKNOWN, doc="An error of no known category.")
InvalidArgumentError = _make(
    "InvalidArgumentError",
    INVALID_ARGUMENT,
    base=type("_InvalidArgumentBase", (OpError, ValueError), {}),
    doc="An operation received an argument it cannot accept (shape, dtype, value).",
)
DeadlineExceededError = _make(
    "DeadlineExceededError",
    DEADLINE_EXCEEDED,
    base=type("_DeadlineBase", (OpError, TimeoutError), {}),
    doc="A wait ran past its deadline; the message names who was missing.",
)
NotFoundError = _make("NotFoundError", NOT_FOUND, doc="A requested file or entity was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, doc="An entity already exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, doc="Not permitted.")
ResourceExhaustedError = _make(
    "ResourceExhaustedError", RESOURCE_EXHAUSTED, doc="Memory or another resource ran out."
)
FailedPreconditionError = _make(
    "FailedPreconditionError",
    FAILED_PRECONDITION,
    doc="The system is not in a state the operation requires (e.g. uninitialized variable).",
)
AbortedError = _make("AbortedError", ABORTED, doc="An operation was aborted.")
OutOfRangeError = _make(
    "OutOfRangeError", OUT_OF_RANGE, doc="Iteration or an index went past the valid range."
)
UnimplementedError = _make(
    "UnimplementedError",
    UNIMPLEMENTED,
    base=type("_UnimplementedBase", (OpError, NotImplementedError), {}),
    doc="The operation is not implemented for these arguments or this device.",
)
InternalError = _make("InternalError", INTERNAL, doc="An invariant of eagerflow was broken.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, doc="A service is unavailable.")
DataLossError = _make("DataLossError", DATA_LOSS, doc="Data was lost or corrupted.")
UnauthenticatedError = _make(
    "UnauthenticatedError", UNAUTHENTICATED, doc="The request lacks valid credentials."
)

OperatorNotAllowedInGraphError = _make(
    "OperatorNotAllowedInGraphError",
    INVALID_ARGUMENT,
    base=type("_NotAllowedBase", (OpError, TypeError), {}),
    doc="A Python operation needs a tensor's value while a function is being traced.",
)

for _cls in (InvalidArgumentError, DeadlineExceededError, UnimplementedError,
             OperatorNotAllowedInGraphError):
    _cls.__bases__[0].__module__ = __name__

_CODE_TO_CLASS = {
    cls.error_code: cls
    for cls in (
        CancelledError,
        UnknownError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        AlreadyExistsError,
        PermissionDeniedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        AbortedError,
        OutOfRangeError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
        UnauthenticatedError,
    )
}


def exception_type_from_error_code(error_code):
    """Returns the exception class for a canonical status code."""
    return _CODE_TO_CLASS[error_code]


def short_repr(value, limit=80):
    """A repr of a user's value for an error message: at most ``limit`` characters, and it
    never raises (a list nested thousands deep makes ``repr`` raise RecursionError).

    Example:
        >>> from eagerflow import errors
        >>> deep = 1
        >>> for _ in range(5000):
        ...     deep = [deep]
        >>> errors.short_repr(deep)
        '[[[[[...]]]]]'
    """
    import reprlib

    shortener = reprlib.Repr()
    shortener.maxlevel = 4
    shortener.maxstring = shortener.maxother = limit
    try:
        text = shortener.repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = "<%s object>" % type(value).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."
