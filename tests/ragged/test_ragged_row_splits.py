"""int32 row splits against TensorFlow 2.21 (tf_reference/ragged_row_splits.json, recorded by
scripts/record_tf_reference.py row_splits on row_splits_cases.py): every construction and op
keeps the partition dtype, mixing int32 and int64 partitions raises TF's ValueError, and
datasets and @function signatures carry row_splits_dtype."""

import json
import os

import numpy as np
import pytest

import eagerflow as ef

from tests.ragged import row_splits_cases as cases

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tf_reference",
                       "ragged_row_splits.json")) as f:
    REF = json.load(f)


def _describe(r):
    if not isinstance(r, ef.RaggedTensor):
        return {"values": r.numpy().tolist(), "splits": []}
    return {"values": r.to_list(), "splits": [s.dtype.name for s in r.nested_row_splits],
            "spec": repr(ef.RaggedTensorSpec.from_value(r))}


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_partition_dtype_is_kept_as_in_tensorflow(name):
    assert _describe(cases.CASES[name](ef)) == REF["cases"][name]


@pytest.mark.parametrize("name", sorted(cases.MIXED))
def test_mixing_partition_dtypes_raises_tensorflows_error(name):
    assert REF["mixed"][name] == "ValueError"
    with pytest.raises(ValueError, match="with_row_splits_dtype"):
        cases.MIXED[name](ef)


@pytest.mark.parametrize("name", sorted(cases.DTYPES))
def test_derived_values_have_tensorflows_dtypes(name):
    assert cases.DTYPES[name](ef).dtype.name == REF["dtypes"][name]


@pytest.mark.parametrize("name", sorted(cases.DATASETS))
def test_datasets_carry_the_partition_dtype(name):
    ds = cases.DATASETS[name](ef)
    assert repr(ds.element_spec) == REF["datasets"][name]["spec"]
    assert [_describe(e) for e in ds] == REF["datasets"][name]["elements"]


def test_signatures_take_the_partition_dtype():
    spec = ef.RaggedTensorSpec([None, None], ef.int32, row_splits_dtype=ef.int32)
    fn = ef.function(lambda r: ef.reduce_sum(r * 2, axis=1), input_signature=[spec])
    rt = cases.a32(ef)
    assert fn(rt).numpy().tolist() == [6, 6, 0, 30]
    with pytest.raises(TypeError, match="not compatible"):
        fn(cases.a64(ef))
    # Without a signature the trace keys on the dtype too (one trace each).
    g = ef.function(lambda r: r + 1)
    assert g(rt).row_splits.dtype is ef.int32
    assert g(cases.a64(ef)).row_splits.dtype is ef.int64
    assert len(g.experimental_retrace_reasons()) == 1


def test_broadcasting_keeps_int32_partitions():
    # TF 2.21 fails inside for this case (an int64/int32 multiply in its broadcaster); the
    # values are those of the int64 tensor, which TF computes.
    got = cases.a32(ef) + ef.ones([2, 4, 1], ef.int32)
    want = cases.a64(ef) + ef.ones([2, 4, 1], ef.int32)
    assert got.to_list() == want.to_list()
    assert [s.dtype for s in got.nested_row_splits] == [ef.int32, ef.int32]


def test_int32_partitions_densify_and_differentiate():
    values = ef.Variable([1.0, 2.0, 3.0])
    with ef.GradientTape() as tape:
        rt = ef.RaggedTensor.from_row_lengths(values * 1.0, ef.constant([2, 1], ef.int32))
        loss = ef.reduce_sum(rt.to_tensor() * ef.constant([[1.0, 2.0], [3.0, 4.0]]))
    assert rt.to_tensor().numpy().tolist() == [[1.0, 2.0], [3.0, 0.0]]
    np.testing.assert_allclose(tape.gradient(loss, values).numpy(), [1.0, 2.0, 3.0])
