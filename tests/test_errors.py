"""``eagerflow.errors``: TF's class hierarchy and status codes, and the promise that bad input
to any op family raises one of these classes with a message naming the op, the inputs'
shapes and dtypes and the device (never a raw numpy exception)."""

import pickle

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors

CODES = {
    "CancelledError": 1, "UnknownError": 2, "InvalidArgumentError": 3,
    "DeadlineExceededError": 4, "NotFoundError": 5, "AlreadyExistsError": 6,
    "PermissionDeniedError": 7, "ResourceExhaustedError": 8, "FailedPreconditionError": 9,
    "AbortedError": 10, "OutOfRangeError": 11, "UnimplementedError": 12, "InternalError": 13,
    "UnavailableError": 14, "DataLossError": 15, "UnauthenticatedError": 16,
}


@pytest.mark.parametrize("name", sorted(CODES))
def test_classes_codes_and_lookup(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.OpError) and issubclass(cls, Exception)
    assert cls.error_code == CODES[name]
    assert errors.exception_type_from_error_code(CODES[name]) is cls
    assert cls.__module__ == "eagerflow.errors" and cls.__name__ == name
    assert name in errors.__all__
    constant = {"InvalidArgumentError": "INVALID_ARGUMENT", "NotFoundError": "NOT_FOUND",
                "UnimplementedError": "UNIMPLEMENTED"}.get(name)
    if constant:
        assert getattr(errors, constant) == CODES[name]


def test_builtin_bases_for_generic_handlers():
    # Generic Python code catching these builtins keeps working, as with TF.
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.UnimplementedError, NotImplementedError)
    assert issubclass(errors.DeadlineExceededError, TimeoutError)
    assert not issubclass(errors.NotFoundError, ValueError)
    assert errors.OK == 0


def test_constructor_forms_and_attributes():
    e = errors.InvalidArgumentError(None, "MatMul", "shapes differ")
    assert (e.node_def, e.op, e.message, str(e)) == (None, "MatMul", "shapes differ",
                                                     "shapes differ")
    short = errors.NotFoundError("no such file")  # TF-incompatible but convenient
    assert short.message == "no such file" and short.op is None
    custom = errors.OpError(None, None, "x", errors.ABORTED)
    assert custom.error_code == errors.ABORTED
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is errors.InvalidArgumentError
    assert (back.op, back.message) == ("MatMul", "shapes differ")


X = ef.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
CPU0 = "CPU:0"

# (name, bad call, words the message must contain). Each family is represented; the words
# are the op name, the shapes/dtypes or value at fault, and the device for kernel errors.
BAD_INPUTS = [
    ("broadcast", lambda: X + ef.constant([1.0, 2.0]),
     ["AddV2", "float32[2, 3]", "float32[2]", CPU0, "broadcast"]),
    ("mixed dtypes", lambda: X * ef.cast(X, ef.float64),
     ["Mul", "float32", "float64", CPU0, "cast"]),
    ("dtype not supported", lambda: ef.sqrt(ef.constant([1, 4])),
     ["Sqrt", "int32", CPU0, "float32"]),
    ("reshape", lambda: ef.reshape(X, [4, 2]), ["Reshape", "[2, 3]", "[4, 2]", CPU0]),
    ("matmul", lambda: ef.matmul(X, X), ["MatMul", "float32[2, 3]", CPU0]),
    ("concat", lambda: ef.concat([X, ef.zeros([2, 2])], axis=0),
     ["ConcatV2", "[2, 3]", "[2, 2]", CPU0]),
    ("stack", lambda: ef.stack([X, ef.zeros([3, 2])]), ["Pack", "[3, 2]", "[2, 3]", CPU0]),
    ("transpose", lambda: ef.transpose(X, [0, 0]), ["Transpose", "[0, 0]", CPU0]),
    ("squeeze", lambda: ef.squeeze(X, axis=0), ["Squeeze", "[2, 3]", CPU0]),
    ("tile", lambda: ef.tile(X, [2]), ["Tile", "float32[2, 3]", CPU0]),
    ("split", lambda: ef.split(X, 2, axis=1), ["Split", "num_split=2", CPU0]),
    ("expand_dims", lambda: ef.expand_dims(X, 5), ["ExpandDims", "axis=5", CPU0]),
    ("pad", lambda: ef.pad(X, [[1, 1]]), ["PadV2", "rank 2", CPU0]),
    ("fill", lambda: ef.fill([2, 2], X), ["Fill", "[2, 3]", CPU0]),
    ("slice", lambda: X[5], ["StridedSlice", "float32[2, 3]", "index 5", CPU0]),
    ("gather", lambda: ef.gather(X, [5]), ["GatherV2", "float32[2, 3]", "5", CPU0]),
    ("scatter_nd", lambda: ef.scatter_nd([[5]], [1.0], [3]), ["ScatterNd", "[5]", CPU0]),
    ("boolean_mask", lambda: ef.boolean_mask(X, [True]), ["BooleanMask", "[1]", CPU0]),
    ("one_hot", lambda: ef.one_hot([1.5], 3), ["OneHot", "float32", CPU0]),
    ("reduce axis", lambda: ef.reduce_sum(X, axis=3), ["reduce_sum", "3", "[-2, 1]"]),
    ("argmax axis", lambda: ef.argmax(X, axis=2), ["argmax", "2", "[-2, 1]"]),
    ("cumsum axis", lambda: ef.cumsum(X, axis=2), ["cumsum", "2"]),
    ("sort axis", lambda: ef.sort(X, axis=4), ["sort", "4"]),
    ("where", lambda: ef.where(ef.constant([True, False]), X, X),
     ["SelectV2", "bool[2]", "float32[2, 3]", CPU0]),
    ("einsum", lambda: ef.einsum("ij,jk->ik", X, X), ["einsum", "'j'", "[2, 3]"]),
    ("inverse", lambda: ef.linalg.inv(X), ["MatrixInverse", "[2, 3]", CPU0, "square"]),
    ("cholesky", lambda: ef.linalg.cholesky(ef.constant([[1.0, 2.0], [2.0, 1.0]])),
     ["Cholesky", "[2, 2]", CPU0, "positive definite"]),
    ("conv2d", lambda: ef.nn.conv2d(ef.zeros([1, 4, 4]), ef.zeros([3, 3, 1, 1]), 1, "SAME"),
     ["Conv", "float32[1, 4, 4]", CPU0, "rank-4"]),
    ("max_pool", lambda: ef.nn.max_pool2d(X, 2, 2, "VALID"), ["MaxPool", "[2, 3]", CPU0]),
    ("softmax int", lambda: ef.nn.softmax(ef.constant([1, 2])), ["Softmax", "int32", CPU0]),
    ("sparse labels", lambda: ef.nn.sparse_softmax_cross_entropy_with_logits(
        labels=[5, 0], logits=X), ["SparseSoftmaxCrossEntropyWithLogits", "5", "[0, 3)", CPU0]),
    ("integer division by zero", lambda: ef.constant([1, 2]) // 0,
     ["FloorDiv", "int32[2]", CPU0, "division by zero"]),
    ("python scalar", lambda: ef.constant([1, 2]) + 1.5, ["AddV2", "1.5", "int32"]),
    ("random shape", lambda: ef.random.uniform([-1]), ["RandomUniform", "-1"]),
    ("zeros shape", lambda: ef.zeros([-2]), ["zeros", "-2"]),
    ("clip broadcast", lambda: ef.clip_by_value(X, ef.constant([1.0, 2.0]), 3.0),
     ["float32[2, 3]", "float32[2]", CPU0]),
]


@pytest.mark.parametrize("name,call,words", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_eagerflow_error(name, call, words):
    with pytest.raises(errors.OpError) as info:
        call()
    exc = info.value
    assert type(exc).__module__ == "eagerflow.errors", type(exc)
    assert isinstance(exc, errors.InvalidArgumentError), type(exc)
    message = str(exc)
    for word in words:
        assert word in message, "%r missing from: %s" % (word, message)
    # The op name is also on the exception, for programs that inspect it.
    assert exc.op, message
    # No numpy traceback leaks through as the cause.
    assert exc.__cause__ is None or isinstance(exc.__cause__, errors.OpError)


def test_kernel_errors_name_the_full_device():
    with pytest.raises(errors.InvalidArgumentError) as info:
        ef.matmul(X, X)
    assert "on /job:localhost/replica:0/task:0/device:CPU:0" in str(info.value)
    assert info.value.op == "MatMul"


def test_unsupported_values_are_unimplemented():
    assert ef.constant(["a", "b"]).dtype is ef.string  # strings are supported (issue 19)
    with pytest.raises(errors.UnimplementedError, match="no eagerflow equivalent"):
        ef.constant(np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_tape_misuse_raises_tf_classes():
    x = ef.constant(1.0)
    with ef.GradientTape() as tape:
        with pytest.raises(errors.FailedPreconditionError, match="re-entered"):
            with tape:
                pass
    with pytest.raises(errors.InvalidArgumentError, match="Sources must be tensors"):
        tape.gradient(x, "not a tensor")
