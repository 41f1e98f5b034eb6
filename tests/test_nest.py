"""``eagerflow.nest``: flatten / pack_sequence_as / map_structure / assert_same_structure,
with TF's conventions (dicts in sorted key order, OrderedDicts too; namedtuples rebuilt)."""

import collections

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import nest

Point = collections.namedtuple("Point", ["y", "x"])  # fields deliberately not sorted
SamePoint = collections.namedtuple("Point", ["y", "x"])  # another class, same name
Other = collections.namedtuple("Other", ["y", "x"])


def test_leaves():
    t = ef.constant([1, 2])
    array = np.array([1, 2])
    for leaf in (1, None, "abc", b"xy", t, array, 2.5):
        flat = nest.flatten(leaf)
        assert len(flat) == 1 and flat[0] is leaf
        assert not nest.is_nested(leaf)
    assert nest.pack_sequence_as(1, ["v"]) == "v"


def test_flatten_order_is_depth_first():
    structure = [1, (2, [3, 4]), [[5]], ()]
    assert nest.flatten(structure) == [1, 2, 3, 4, 5]
    assert nest.flatten([None, [], {}]) == [None]
    deep = current = []
    for _ in range(3000):  # no recursion limit
        current.append([])
        current = current[0]
    current.append("leaf")
    assert nest.flatten(deep) == ["leaf"]


def test_dicts_flatten_in_sorted_key_order():
    assert nest.flatten({"b": 1, "a": {"d": 2, "c": 3}}) == [3, 2, 1]
    assert nest.flatten({3: "c", 1: "a", 2: "b"}) == ["a", "b", "c"]
    # OrderedDict is sorted too (TF's rule), so it can be repacked as a plain dict.
    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    assert nest.flatten(ordered) == [2, 1]
    assert nest.flatten({"a": 1, "b": [2, (3, {"c": 4})]}) == [1, 2, 3, 4]


def test_pack_keeps_key_order_and_types():
    packed = nest.pack_sequence_as({"b": 0, "a": 0}, [10, 20])
    assert packed == {"a": 10, "b": 20} and list(packed) == ["b", "a"]
    ordered = nest.pack_sequence_as(collections.OrderedDict([("b", 0), ("a", 0)]), [10, 20])
    assert type(ordered) is collections.OrderedDict
    assert list(ordered.items()) == [("b", 20), ("a", 10)]
    default = nest.map_structure(lambda v: v * 2, collections.defaultdict(list, {"a": 1}))
    assert isinstance(default, collections.defaultdict) and default.default_factory is list
    assert default == {"a": 2}


def test_namedtuples():
    p = Point(y=1, x=[2, 3])
    assert nest.flatten(p) == [1, 2, 3]  # field order, not sorted
    packed = nest.pack_sequence_as(p, ["a", "b", "c"])
    assert type(packed) is Point and packed == Point(y="a", x=["b", "c"])
    assert nest.map_structure(lambda a, b: a + b, Point(1, [2]), Point(10, [20])) == \
        Point(11, [22])


def test_pack_round_trip():
    structure = {"w": [ef.zeros([2]), (1, 2)], "b": Point(3, {"k": 4})}
    flat = nest.flatten(structure)
    again = nest.pack_sequence_as(structure, flat)
    again_flat = nest.flatten(again)
    assert len(again_flat) == len(flat) and all(a is b for a, b in zip(again_flat, flat))
    assert type(again["b"]) is Point and isinstance(again["w"][1], tuple)
    assert nest.pack_sequence_as([1, [], 2], [5, 6]) == [5, [], 6]


def test_pack_count_mismatch():
    with pytest.raises(ValueError, match="2 leaves.*1 elements"):
        nest.pack_sequence_as([1, 2], [5])
    with pytest.raises(ValueError, match="single leaf.*2 values"):
        nest.pack_sequence_as(1, [5, 6])


def test_map_structure():
    assert nest.map_structure(lambda x: x * 10, (1, [2])) == (10, [20])
    assert nest.map_structure(lambda a, b: a - b, {"x": 5, "y": [3]}, {"y": [1], "x": 2}) == \
        {"x": 3, "y": [2]}
    tensors = nest.map_structure(ef.constant, [1.0, (2, 3)])
    assert isinstance(tensors[1], tuple) and tensors[1][0].dtype == ef.int32
    assert nest.map_structure(lambda x: x, None) is None
    with pytest.raises(ValueError, match="at least one"):
        nest.map_structure(lambda: 0)


def test_map_structure_checks_types_unless_told_not_to():
    with pytest.raises(TypeError, match="list and tuple"):
        nest.map_structure(lambda a, b: a + b, [1], (1,))
    assert nest.map_structure(lambda a, b: a + b, [1], (2,), check_types=False) == [3]


def test_assert_same_structure():
    nest.assert_same_structure([1, (2, {"a": 3})], ["x", ("y", {"a": "z"})])
    with pytest.raises(ValueError, match="number of elements: 2 and 3"):
        nest.assert_same_structure([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="same nested structure"):
        nest.assert_same_structure([1, [2]], [1, 2])
    with pytest.raises(ValueError, match="same keys"):
        nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(TypeError, match="sequence type: list and tuple"):
        nest.assert_same_structure([1, 2], (1, 2))
    nest.assert_same_structure([1, 2], (1, 2), check_types=False)
    # Namedtuples with the same name and fields count as the same type (TF).
    nest.assert_same_structure(Point(1, 2), SamePoint(1, 2))
    with pytest.raises(TypeError, match="Point and Other"):
        nest.assert_same_structure(Point(1, 2), Other(1, 2))
    with pytest.raises(TypeError):
        nest.assert_same_structure(Point(1, 2), (1, 2))


def test_flatten_with_paths():
    paths = nest.flatten_with_paths({"b": Point(3, 4), "a": [1, 2]})
    assert paths == [(("a", 0), 1), (("a", 1), 2), (("b", 0), 3), (("b", 1), 4)]
    assert [leaf for _, leaf in paths] == nest.flatten({"b": Point(3, 4), "a": [1, 2]})
    assert nest.flatten_with_paths(7) == [((), 7)]


def test_is_nested():
    assert nest.is_nested([]) and nest.is_nested(()) and nest.is_nested({})
    assert nest.is_nested(Point(1, 2)) and nest.is_nested(collections.OrderedDict())
    assert not nest.is_nested("ab") and not nest.is_nested(np.zeros(3))
    assert not nest.is_nested(ef.zeros([3]))
