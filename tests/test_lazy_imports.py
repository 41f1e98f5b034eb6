"""``import eagerflow`` leaves the string, ragged and sparse modules unloaded until first
use, while string tensors and the ops that move them work from the start."""

from tests.fresh_interpreter import run_python_ok


def test_import_eagerflow_does_not_load_strings_ragged_or_sparse(tmp_path):
    run_python_ok("""
        import sys
        import eagerflow as ef

        def loaded():
            return sorted(m for m in sys.modules if m.startswith(("eagerflow.strings",
                "eagerflow.ragged", "eagerflow.sparse", "eagerflow.ops.ragged"))
                or m.startswith("eagerflow.ops.strings.") and not m.endswith(".structural"))

        assert loaded() == [], loaded()
        x = ef.constant(["b", "a", "c"])  # string tensors need no string ops module
        assert ef.gather(ef.concat([x, x], 0), [4, 1]).numpy().tolist() == [b"a", b"a"]
        assert (x == "a").numpy().tolist() == [False, True, False]
        assert loaded() == [], loaded()
        assert ef.as_string(7).numpy() == b"7"  # a top-level name of a lazy family
        assert ef.strings.split(["p q"]).to_list() == [[b"p", b"q"]]
        assert isinstance(ef.ragged.constant([[1]]), ef.RaggedTensor)
        assert ef.sparse.to_dense(ef.SparseTensor([[0]], [5], [2])).numpy().tolist() == [5, 0]
        assert {"strings", "ragged", "sparse", "RaggedTensor", "as_string"} <= set(dir(ef))
        print("OK")
    """, tmp_path)
