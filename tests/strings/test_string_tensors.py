"""String tensors: conversion, bytes out, equality, cast rules, structural ops, Dataset
elements, @function signatures and serialized graphs."""

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import serialize


def test_constant_holds_bytes():
    t = ef.constant(["ab", b"c\x00d", "caf\u00e9"])
    assert t.dtype is ef.string and t.shape == (3,)
    out = t.numpy()
    assert out.dtype == object
    assert out.tolist() == [b"ab", b"c\x00d", b"caf\xc3\xa9"]  # NULs kept, str UTF-8 encoded
    assert ef.constant("x").numpy() == b"x"
    assert ef.constant(np.array(["q", "rr"])).numpy().tolist() == [b"q", b"rr"]
    assert ef.constant([["a"], ["b"]]).shape == (2, 1)
    assert ef.constant([], dtype=ef.string).shape == (0,)


@pytest.mark.parametrize("bad", [["a", 1], np.array([object()])])
def test_refuses_non_string_objects(bad):
    with pytest.raises(errors.InvalidArgumentError):
        ef.constant(bad)


def test_non_rectangular_strings_raise_value_error_as_tf():
    with pytest.raises(ValueError, match="non-rectangular") as info:
        ef.constant([["a"], ["b", "c"]])
    assert type(info.value) is ValueError


def test_no_implicit_string_number_conversion():
    with pytest.raises(TypeError):
        ef.constant(1, dtype=ef.string)
    with pytest.raises(TypeError):
        ef.constant("1", dtype=ef.float32)
    with pytest.raises(TypeError):
        ef.constant(np.array([1.0]), dtype=ef.string)


def test_equality_and_cast_rules():
    a = ef.constant(["ab", "c"])
    assert ef.equal(a, "ab").numpy().tolist() == [True, False]
    assert (a != ef.constant(["ab", "d"])).numpy().tolist() == [False, True]
    assert ef.cast(a, ef.string) is a
    with pytest.raises(errors.UnimplementedError, match="to_number"):
        ef.cast(a, ef.float32)
    with pytest.raises(errors.UnimplementedError):
        ef.cast(ef.constant([1]), ef.string)
    with pytest.raises(errors.InvalidArgumentError, match="does not support dtype string"):
        ef.add(a, a)


def test_structural_ops_move_strings():
    a = ef.constant([["a", "b"], ["c", "d"]])
    assert ef.reshape(a, [4]).numpy().tolist() == [b"a", b"b", b"c", b"d"]
    assert ef.transpose(a).numpy().tolist() == [[b"a", b"c"], [b"b", b"d"]]
    assert a[1, 0].numpy() == b"c"
    assert ef.concat([a, a], 0).shape == (4, 2)
    assert ef.gather(ef.constant(["x", "y", "z"]), [2, 0]).numpy().tolist() == [b"z", b"x"]
    assert ef.stack([ef.constant("p"), ef.constant("q")]).numpy().tolist() == [b"p", b"q"]
    assert ef.where([True, False], ef.constant(["t", "t"]), ef.constant(["f", "f"])
                    ).numpy().tolist() == [b"t", b"f"]
    assert ef.shape(a).numpy().tolist() == [2, 2]


def test_dataset_of_strings():
    ds = ef.data.Dataset.from_tensor_slices(["a", "bb", "a"]).map(
        lambda s: (s, ef.equal(s, "a")))
    got = [(s.numpy(), bool(b)) for s, b in ds]
    assert got == [(b"a", True), (b"bb", False), (b"a", True)]
    batched = next(iter(ef.data.Dataset.from_tensor_slices(["a", "bb", "c"]).batch(2)))
    assert batched.numpy().tolist() == [b"a", b"bb"]


def test_function_signature_and_serialized_graph():
    @ef.function(input_signature=[ef.TensorSpec([None], ef.string)])
    def f(x):
        return ef.strings.upper(ef.strings.join([x, "!"])), ef.equal(x, "ab")

    eager = f(ef.constant(["ab", "c"]))
    assert eager[0].numpy().tolist() == [b"AB!", b"C!"]
    data = serialize.serialize_concrete_function(f.get_concrete_function())
    loaded = serialize.load_function(data)
    out = loaded(ef.constant(["ab", "q"]))
    assert out[0].numpy().tolist() == [b"AB!", b"Q!"]
    assert out[1].numpy().tolist() == [True, False]


def test_string_constant_in_graph_round_trips():
    @ef.function
    def g():
        return ef.constant(["x\x00", "", "\u20ac"])

    loaded = serialize.load_function(serialize.serialize_concrete_function(
        g.get_concrete_function()))
    assert loaded().numpy().tolist() == [b"x\x00", b"", b"\xe2\x82\xac"]


def test_tampered_string_tensor_is_refused():
    from eagerflow.function import graph_pb2

    msg = graph_pb2.TensorProto()
    serialize.codec._encode_tensor(np.array([b"a", b"b"], dtype=object), msg)
    del msg.string_val[1]
    with pytest.raises(errors.DataLossError):
        serialize.codec._decode_tensor(msg)
