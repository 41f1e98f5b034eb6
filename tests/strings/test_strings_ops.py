"""``eagerflow.strings`` values, checked against TF's documented outputs."""

import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.ops.fingerprint import fingerprint64


def L(t):
    return t.numpy().tolist()


def test_join_and_reduce_join():
    assert L(ef.strings.join([["a", "b"], "!"], separator="-")) == [b"a-!", b"b-!"]
    x = [["abc", "123"], ["def", "456"]]
    assert ef.strings.reduce_join(x).numpy() == b"abc123def456"
    assert L(ef.strings.reduce_join(x, axis=-1)) == [b"abc123", b"def456"]
    assert L(ef.strings.reduce_join(x, axis=-1, separator=".")) == [b"abc.123", b"def.456"]
    assert L(ef.strings.reduce_join(x, axis=0, keepdims=True)) == [[b"abcdef", b"123456"]]
    with pytest.raises(errors.InvalidArgumentError, match="axis"):
        ef.strings.reduce_join(x, axis=2)


def test_length_case_strip_substr():
    assert L(ef.strings.length(["Hello", "TensorFlow", "\U0001F642"])) == [5, 10, 4]
    assert L(ef.strings.length(["Hello", "TensorFlow", "\U0001F642"], unit="UTF8_CHAR")) == \
        [5, 10, 1]
    assert ef.strings.lower("CamelCase").numpy() == b"camelcase"
    assert ef.strings.upper("caf\u00e9").numpy() == b"CAF\xc3\xa9"  # ASCII only by default
    assert ef.strings.upper("caf\u00e9", encoding="utf-8").numpy() == "CAF\u00c9".encode()
    assert L(ef.strings.strip(["\n\tab c  "])) == [b"ab c"]
    assert ef.strings.substr("Hello", 1, 3).numpy() == b"ell"
    assert ef.strings.substr("Hello", -3, 2).numpy() == b"ll"
    assert ef.strings.substr("Hello", 2, 10).numpy() == b"llo"
    with pytest.raises(errors.InvalidArgumentError, match="out of range"):
        ef.strings.substr("Hello", 6, 1)


def test_regex():
    assert L(ef.strings.regex_full_match(["TF lib", "lib TF"], ".*lib$")) == [True, False]
    assert ef.strings.regex_replace("Text with tags.<br /><b>contains html</b>",
                                    "<[^>]+>", " ").numpy() == \
        b"Text with tags.  contains html "
    assert ef.strings.regex_replace("aaa", "a", "b", replace_global=False).numpy() == b"baa"
    with pytest.raises(errors.InvalidArgumentError):
        ef.strings.regex_full_match(["a"], "([")


def test_numbers():
    assert L(ef.strings.to_number(["1.5", "-2", "3e2"])) == [1.5, -2.0, 300.0]
    assert ef.strings.to_number(["7"], ef.int64).dtype is ef.int64
    with pytest.raises(errors.InvalidArgumentError, match="StringToNumber"):
        ef.strings.to_number(["abc"])
    with pytest.raises(errors.InvalidArgumentError):
        ef.strings.to_number(["3000000000"], ef.int32)
    assert ef.strings.as_string(3.1415926, precision=3).numpy() == b"3.142"
    assert L(ef.strings.as_string([3, 2])) == [b"3", b"2"]
    assert L(ef.strings.as_string([True])) == [b"true"]
    assert ef.strings.as_string(5, width=3, fill="0").numpy() == b"005"


def test_format():
    assert ef.strings.format("tensor: {}", ef.range(10)).numpy() == \
        b"tensor: [0 1 2 ... 7 8 9]"
    assert ef.strings.format("{} {}", [ef.constant([1, 2]), ef.constant("s")]).numpy() == \
        b"[1 2] s"
    with pytest.raises(errors.InvalidArgumentError, match="placeholders"):
        ef.strings.format("{}", [ef.constant(1), ef.constant(2)])


def test_hash_buckets_match_tf():
    # TF's documented outputs of to_hash_bucket_fast and keras Hashing(num_bins=3).
    assert L(ef.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3)) == [0, 2, 2]
    assert L(ef.strings.to_hash_bucket_fast(list("ABCDE"), 3)) == [1, 0, 1, 1, 2]
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F  # FarmHash's k2 for the empty string


def test_fingerprint_paths_are_distinct_and_stable():
    # Every length branch (0-16, 17-32, 33-64, > 64 with several 64-byte blocks) runs, and a
    # one-byte change anywhere changes the value.
    for n in (1, 7, 8, 16, 17, 32, 33, 64, 65, 128, 200):
        s = bytes(range(n))
        h = fingerprint64(s)
        assert 0 <= h < 2**64
        for k in (0, n // 2, n - 1):
            t = bytearray(s)
            t[k] ^= 1
            assert fingerprint64(bytes(t)) != h


def test_split_is_ragged():
    assert L(ef.strings.split("hello world")) == [b"hello", b"world"]
    rt = ef.strings.split(["hello world", "a b c"])
    assert isinstance(rt, ef.RaggedTensor)
    assert rt.to_list() == [[b"hello", b"world"], [b"a", b"b", b"c"]]
    assert ef.strings.split(["1,2,,3", ""], sep=",").to_list() == [[b"1", b"2", b"", b"3"],
                                                                   [b""]]
    assert ef.strings.split(["a b c"], maxsplit=1).to_list() == [[b"a", b"b c"]]
    nested = ef.strings.split([["a b", "c"], ["d", ""]])
    assert nested.ragged_rank == 2
    assert nested.to_list() == [[[b"a", b"b"], [b"c"]], [[b"d"], []]]


def test_bytes_unicode():
    assert L(ef.strings.bytes_split("hello")) == [b"h", b"e", b"l", b"l", b"o"]
    assert ef.strings.unicode_decode(["Hello", "\u00e9"], "UTF-8").to_list() == \
        [[72, 101, 108, 108, 111], [233]]
    assert ef.strings.unicode_decode(b"a\xffb", "UTF-8").numpy().tolist() == [97, 65533, 98]
    with pytest.raises(errors.InvalidArgumentError, match="errors="):
        ef.strings.unicode_decode(b"a\xff", "UTF-8", errors="strict")
    assert ef.strings.unicode_split("caf\u00e9", "UTF-8").numpy().tolist() == \
        [b"c", b"a", b"f", b"\xc3\xa9"]


def test_ngrams():
    assert L(ef.strings.ngrams(["A", "B", "C", "D"], 2)) == [b"A B", b"B C", b"C D"]
    assert L(ef.strings.ngrams(["A", "B", "C"], 2, separator="_")) == [b"A_B", b"B_C"]
    assert L(ef.strings.ngrams(["a", "b"], 3, pad_values=("<", ">"))) == \
        [b"< < a", b"< a b", b"a b >", b"b > >"]
    rt = ef.ragged.constant([["a", "b", "c"], ["d"]])
    assert ef.strings.ngrams(rt, 2).to_list() == [[b"a b", b"b c"], []]
    assert ef.strings.ngrams(rt, [1, 2]).to_list() == [[b"a", b"b", b"c", b"a b", b"b c"],
                                                       [b"d"]]
    assert ef.strings.ngrams(rt, 3, preserve_short_sequences=True).to_list() == \
        [[b"a b c"], [b"d"]]


def test_strings_run_in_dataset_map():
    ds = ef.data.Dataset.from_tensor_slices(["The Cat", "a dog"]).map(
        lambda s: ef.strings.to_hash_bucket_fast(ef.strings.lower(s), 100))
    want = [fingerprint64(b"the cat") % 100, fingerprint64(b"a dog") % 100]
    assert [int(x) for x in ds] == want
