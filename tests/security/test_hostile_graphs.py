"""Hostile serialized graphs and SavedModels: code in names, keys, ops and strings,
inconsistent programs, impossible shapes. Every load is refused with an eagerflow error or
loads and runs safely; no payload ever runs (its sentinel directory never appears)."""

import os
import pathlib

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import graph_validation, serialize
from tests.security.hostile import assert_safe, record, run_cases


def _payload(sentinel):
    return "__import__('os').mkdir(%r)" % str(sentinel)


def _base_function():
    w = ef.Variable([[1.0, 2.0], [3.0, 4.0]])

    def f(x):
        y = ef.matmul(x, w, transpose_b=True)
        return ef.reduce_sum(ef.tanh(y) * 2.0 + 1.0, axis=1, keepdims=True)

    return ef.function(f).get_concrete_function(ef.TensorSpec([None, 2]))


def _proto(optimized=False):
    cf = _base_function()
    return serialize.graph_to_proto(cf, embed_variables=True)


def _node(msg, op):
    return next(n for n in msg.graph.node if n.op == op)


def _graph_cases(tmp):
    """``[(name, SavedFunction message)]``: each a different hostile edit of a sane graph."""
    sentinel = tmp / "PWNED"
    code = _payload(sentinel)
    cases = []

    def case(name, edit):
        msg = _proto()
        edit(msg)
        cases.append((name, msg))

    def attr_key(msg):  # the key once pasted into the executor's generated call
        _node(msg, "Sum").attr["q=%s, r" % code].b = True

    case("attr key with code (Sum)", attr_key)

    def attr_key_matmul(msg):
        _node(msg, "MatMul").attr["transpose_a=%s or False, zz" % code].b = True

    case("attr key with code (MatMul)", attr_key_matmul)

    def attr_key_newline(msg):
        _node(msg, "Tanh").attr["x\n%s\n" % code].i = 1

    case("attr key with newline and code", attr_key_newline)

    def attr_key_dunder(msg):
        _node(msg, "Tanh").attr["__class__"].i = 1

    case("undeclared identifier attr key", attr_key_dunder)

    def node_name(msg):
        node = _node(msg, "Tanh")
        old = node.name
        node.name = "t\n%s\n#" % code
        for n in msg.graph.node:
            for k, text in enumerate(n.input):
                if text.startswith(old + ":"):
                    n.input[k] = node.name + text[len(old):]

    case("node name with code", node_name)

    def op_name(msg):
        _node(msg, "Tanh").op = code

    case("op name with code", op_name)

    def op_dunder(msg):
        _node(msg, "Tanh").op = "__import__"

    case("op name __import__", op_dunder)

    def device(msg):
        _node(msg, "Tanh").device = "/device:CPU:0');%s;('" % code

    case("device string with code", device)

    def graph_name(msg):
        msg.signature.name = "g>\n%s\n" % code

    case("function name with code", graph_name)

    def string_attr(msg):
        _node(msg, "Sum").attr["keepdims"].s = code.encode()

    case("code as a string attr value", string_attr)

    def print_to_file(msg):
        node = msg.graph.node.add(name="print_hostile", op="Print", stateful=True)
        node.input.append("x:0")
        node.attr["template"].CopyFrom(serialize.attr_to_proto((None,)))
        node.attr["output_stream"].CopyFrom(
            serialize.attr_to_proto("file://" + str(tmp / "PWNED_print")))

    case("Print to a file", print_to_file)

    def wrong_shape(msg):
        _node(msg, "Tanh").output[0].shape.dim[1] = 7

    case("declared shape inconsistent", wrong_shape)

    def wrong_dtype(msg):
        _node(msg, "Tanh").output[0].dtype = ef.int32.as_datatype_enum

    case("declared dtype inconsistent", wrong_dtype)

    def huge_shape(msg):
        out = _node(msg, "Tanh").output[0].shape
        out.dim[:] = [2**62, 4]

    case("declared shape of 2**64 bytes", huge_shape)

    def huge_const(msg):
        node = next(n for n in msg.graph.node if n.op == "Const")
        node.value.tensor.shape.dim[:] = [2**62, 4]
        node.value.tensor.content = b""
        node.output[0].shape.dim[:] = [2**62, 4]

    case("Const of shape [2**62, 4] with no bytes", huge_const)

    def variable_index(msg):
        _node(msg, "ReadVariableOp").attr["variable"].i = 7

    case("variable index out of range", variable_index)

    def variable_dtype(msg):
        _node(msg, "ReadVariableOp").output[0].dtype = ef.float64.as_datatype_enum

    case("variable read with the wrong dtype", variable_dtype)

    def recursive(msg):
        inner = msg.graph.library.function.add()
        inner.signature.name = "loop"
        node = inner.node.add(name="x", op="Placeholder")
        node.output.add().CopyFrom(_node(msg, "Placeholder").output[0])
        inner.signature.input.add().CopyFrom(node.output[0])
        inner.signature.input[0].name = "x"
        call = inner.node.add(name="again", op="If", input=["x:0", "x:0"])
        call.attr["then_branch"].s = b"loop"
        call.attr["else_branch"].s = b"loop"
        call.output.add().CopyFrom(node.output[0])
        inner.signature.output.append("again:0")
        msg.signature.library["loop"] = "loop"
        top = msg.graph.node.add(name="enter", op="If", input=["x:0", "x:0"])
        top.attr["then_branch"].s = b"loop"
        top.attr["else_branch"].s = b"loop"
        top.output.add().CopyFrom(node.output[0])

    case("a branch that calls itself", recursive)

    def missing_branch(msg):
        top = msg.graph.node.add(name="enter", op="If", input=["x:0", "x:0"])
        top.attr["then_branch"].s = b"nowhere"
        top.attr["else_branch"].s = b"nowhere"
        top.output.add().CopyFrom(_node(msg, "Placeholder").output[0])

    case("a branch that is not in the library", missing_branch)
    return cases, sentinel


def _fused_cases(tmp):
    """Hostile FusedElementwise programs (their attrs reach generated Python and CUDA)."""
    sentinel = tmp / "PWNED_fused"
    code = _payload(sentinel)
    x = ef.TensorSpec([4])
    cases = []

    def make(ops, arity, args, dtypes, op_attrs, inplace, name):
        cf = ef.function(lambda t: ef.tanh(t)).get_concrete_function(x)
        msg = serialize.graph_to_proto(cf)
        node = _node(msg, "Tanh")
        node.op = "FusedElementwise"
        for key, value in (("ops", ops), ("arity", arity), ("args", args),
                           ("dtypes", dtypes), ("op_attrs", op_attrs), ("inplace", inplace)):
            node.attr[key].CopyFrom(serialize.attr_to_proto(value))
        cases.append((name, msg))

    f32 = "float32"
    make(("Tanh",), (1,), (0,), (f32,), ("",), (-1,), "fused: a sane program")
    make(("LeakyRelu",), (1,), (0,), (f32,), ("((%r, 1.0),)" % ("alpha=%s or 1.0, zz" % code),),
         (-1,), "fused: sub-op attr key with code")
    make(("LeakyRelu",), (1,), (0,), (f32,), ("(('alpha', %r),)" % ("1.0); %s; (" % code),),
         (-1,), "fused: CUDA attr value with code")
    make(("Tanh",), (1,), (5,), (f32,), ("",), (-1,), "fused: reference out of range")
    make(("Tanh",), (1,), (-1,), (f32,), ("",), (-1,), "fused: negative reference")
    make(("Tanh",), (1,), (0,), (f32,), ("",), (9,), "fused: in-place target out of range")
    make(("Tanh",), (1,), (0,), (f32,), ("__import__('os')",), (-1,),
         "fused: attrs that are code")
    make(("Tanh",), (1,), (0,), ("float32; %s" % code,), ("",), (-1,),
         "fused: dtype with code")
    make((code,), (1,), (0,), (f32,), ("",), (-1,), "fused: op name with code")
    make(("Tanh", "Tanh"), (1,), (0,), (f32,), ("",), (-1,), "fused: inconsistent lengths")
    return cases, sentinel


_LOAD_GRAPH = """
f = __import__("eagerflow.function.serialize", fromlist=["x"]).load(PATH)
out = f(ef.constant(np.ones((3, 2) if "fused" not in PATH else (4,), np.float32)))
"""


def test_hostile_graph_files(tmp_path):
    graph_cases, sentinel = _graph_cases(tmp_path)
    fused_cases, fused_sentinel = _fused_cases(tmp_path)
    cases = []
    for k, (name, msg) in enumerate(graph_cases + fused_cases):
        path = tmp_path / ("%s%d.efg" % ("fused" if name.startswith("fused") else "g", k))
        path.write_bytes(serialize.proto_to_bytes(msg))
        cases.append({"name": name, "path": str(path), "code": _LOAD_GRAPH})
    results = run_cases(cases, tmp_path, memory_mb=3072)
    record("graph files", results)
    assert_safe(results, [sentinel, fused_sentinel, tmp_path / "PWNED_print"])
    loaded = sorted(k for k, v in results.items() if v[0] == "loaded")
    # Only the unmodified fused program and the harmless string value may load.
    assert set(loaded) <= {"fused: a sane program", "fused: CUDA attr value with code",
                           "function name with code"}, loaded
    assert results["attr key with code (Sum)"][0] == "refused"
    assert "plain identifier" in results["attr key with code (Sum)"][1]
    assert results["Const of shape [2**62, 4] with no bytes"][0] == "refused"


def test_hostile_saved_models(tmp_path):
    """The same edits inside a SavedModel (its manifest recomputed, as an attacker would)."""
    from eagerflow.saved_model import _format

    class M(ef.Module):
        def __init__(self):
            super().__init__()
            self.w = ef.Variable([[1.0, 2.0], [3.0, 4.0]])

        @ef.function(input_signature=[ef.TensorSpec([None, 2])])
        def __call__(self, x):
            return ef.reduce_sum(ef.tanh(ef.matmul(x, self.w)) * 2.0, axis=1, keepdims=True)

    base = tmp_path / "base"
    ef.saved_model.save(M(), str(base))
    sentinel = tmp_path / "PWNED_sm"
    code = _payload(sentinel)
    edits = {
        "attr key with code": lambda n: n.attr["q=%s, r" % code].CopyFrom(
            serialize.attr_to_proto(True)) if n.op == "Sum" else None,
        "node name with code": lambda n: setattr(n, "name", "s\n" + code) if n.op == "Sum"
        else None,
        "op name with code": lambda n: setattr(n, "op", code) if n.op == "Tanh" else None,
        "device with code": lambda n: setattr(n, "device", code) if n.op == "Tanh" else None,
        "string attr with code": lambda n: n.attr["keepdims"].CopyFrom(
            serialize.attr_to_proto(code)) if n.op == "Sum" else None,
    }
    cases = []
    for k, (name, edit) in enumerate(edits.items()):
        target = tmp_path / ("sm%d" % k)
        import shutil

        shutil.copytree(base, target)
        model = _format.read_model(str(target))
        for fn in model.function:
            for node in fn.function.graph.node:
                edit(node)
        (target / _format.SAVED_MODEL_FILENAME).write_bytes(_format.model_to_bytes(model))
        _format.write_manifest(str(target))
        cases.append({"name": name, "path": str(target), "code": """
m = ef.saved_model.load(PATH)
m(ef.constant(np.ones((3, 2), np.float32)))
"""})
    results = run_cases(cases, tmp_path)
    record("SavedModels", results)
    assert_safe(results, [sentinel])
    assert all(v[0] == "refused" for v in results.values()), results


def test_keyword_grammar():
    assert graph_validation.keyword_name("axis", "Sum") == "axis"
    for bad in ("", "1a", "a b", "a=b", "lambda", "x\n", "é", "a.b", b"axis", 3):
        with pytest.raises(errors.DataLossError, match="plain identifier"):
            graph_validation.keyword_name(bad, "Sum")


def test_sane_graphs_still_load_and_agree(tmp_path):
    """The validation refuses nothing a trace produces: a loaded graph equals eager."""
    cf = _base_function()
    loaded = serialize.load_function(serialize.serialize_concrete_function(
        cf, embed_variables=True))
    x = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    np.testing.assert_allclose(loaded(ef.constant(x)).numpy(), cf(ef.constant(x)).numpy(),
                               rtol=1e-6)
    assert os.listdir(tmp_path) == []
    assert pathlib.Path(tmp_path).exists()


def test_cuda_source_takes_only_numbers_from_attributes():
    """A fused program's CUDA source is built without a GPU: attribute values other than
    finite numbers never reach it (the sub-op falls back to its own kernel)."""
    from eagerflow.function.passes import fused_step

    def source(alpha):
        attrs = "(('alpha', %r),)" % (alpha,)
        program = fused_step.Program(("LeakyRelu",), (1,), (0,), ("float32",), (attrs,),
                                     (-1,), ("float32",))
        return fused_step.cuda_source(program)

    assert "0.25" in source(0.25)[2]
    assert source("1.0); asm(\"trap;\"); (") is None
    assert source(True) is None


def test_generated_gpu_kernels_take_no_strings_from_a_graph():
    """The several-result, in-place and reduction forms: a sub-op attr string, a node name
    or a hostile axis never reaches the CUDA texts (they hold declared templates, dtype
    names, numbers and generated names only)."""
    from eagerflow.function.passes import fused_gpu, fused_step

    evil = 'x"); asm("trap;"); ("'
    several = fused_step.Program(
        ("LeakyRelu", "Neg"), (1, 1), (0, 1), ("float32", "float32"),
        ("(('alpha', 0.5), ('note', %r))" % evil, ""), (-1, -1), ("float32",),
        outputs=(0, 1))
    for intos in (None, (0, -1)):
        texts = fused_gpu.cuda_source(several, intos)
        assert texts is not None and not any(evil in t or "note" in t for t in texts)
    reduction = fused_step.Program(
        ("Neg", "Sum"), (1, 1), (0, 1), ("float32", "float32"),
        ("", "(('axis', (0,)), ('keepdims', False), ('name', %r))" % evil), (-1, -1),
        ("float32",))
    fields = fused_gpu.reduction_source(reduction)
    assert fields is not None and not any(evil in v or "name'" in v for v in fields.values())
    assert fused_gpu.cuda_source(fused_step.Program(
        ("LeakyRelu",), (1,), (0,), ("float32",), ("(('alpha', %r),)" % evil,), (-1,),
        ("float32",), outputs=(0,)), (0,)) is None
