"""The ``saved_model_cli`` command line: show a SavedModel's signatures, run one on .npy files.

Usage::

    python -m eagerflow.saved_model_cli show --dir D
    python -m eagerflow.saved_model_cli show --dir D --tag_set serve
    python -m eagerflow.saved_model_cli show --dir D --tag_set serve --signature_def NAME
    python -m eagerflow.saved_model_cli show --dir D --all
    python -m eagerflow.saved_model_cli run --dir D --tag_set serve --signature_def NAME \\
        --inputs "x=x.npy;y=y.npz[arr_0]" [--input_exprs "z=[1.0, 2.0]"] [--outdir O]
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

import numpy as np

from eagerflow.saved_model import _format

_DT_NAMES = {}


def _dt_name(enum):
    if not _DT_NAMES:
        from eagerflow.function import graph_pb2

        for value in graph_pb2.DataType.DESCRIPTOR.values:
            _DT_NAMES[value.number] = value.name
    name = _DT_NAMES.get(enum, "DT_INVALID")
    # TensorFlow's spelling: DT_FLOAT for float32, DT_DOUBLE for float64.
    return {"DT_FLOAT32": "DT_FLOAT", "DT_FLOAT64": "DT_DOUBLE",
            "DT_FLOAT16": "DT_HALF"}.get(name, name)


def _shape(msg):
    if msg.unknown_rank:
        return "unknown_rank"
    dims = list(msg.dim)
    return "(%s)" % (", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else ""))


def _tensor_info(kind, spec, prefix, out):
    out.append("  %s['%s'] tensor_info:" % (kind, spec.name))
    out.append("      dtype: %s" % _dt_name(spec.dtype))
    out.append("      shape: %s" % _shape(spec.shape))
    out.append("      name: %s_%s:0" % (prefix, spec.name))


def _signature_text(sig):
    out = ["The given SavedModel SignatureDef contains the following input(s):"]
    for spec in sig.input:
        _tensor_info("inputs", spec, sig.name, out)
    out.append("The given SavedModel SignatureDef contains the following output(s):")
    for spec in sig.output:
        _tensor_info("outputs", spec, "StatefulPartitionedCall", out)
    out.append("Method name is: tensorflow/serving/predict")
    return "\n".join(out)


def _find_signature(model, name, directory):
    for sig in model.signature:
        if sig.name == name:
            return sig
    raise SystemExit("error: SavedModel %s has no signature %r (it has: %s)" % (
        directory, name, ", ".join(s.name for s in model.signature) or "none"))


def show(args):
    model = _format.read_model(args.dir)
    lines = []
    if args.all:
        lines.append("MetaGraphDef with tag-set: '%s' contains the following SignatureDefs:"
                     % ", ".join(model.tag))
        for sig in model.signature:
            lines.append("")
            lines.append("signature_def['%s']:" % sig.name)
            lines.append(_signature_text(sig))
        lines.append("")
        lines.append("Concrete Functions:")
        for entry in model.function:
            specs = ", ".join("%s: %s%s" % (s.name, _dt_name(s.dtype), _shape(s.shape))
                              for s in entry.function.signature.input)
            lines.append("  Function Name: '%s' (%s)" % (entry.name, specs))
    elif args.signature_def:
        lines.append(_signature_text(_find_signature(model, args.signature_def, args.dir)))
    elif args.tag_set:
        lines.append("The given SavedModel MetaGraphDef contains SignatureDefs with the "
                     "following keys:")
        for sig in model.signature:
            lines.append('SignatureDef key: "%s"' % sig.name)
    else:
        lines.append("The given SavedModel contains the following tag-sets:")
        lines.append("'%s'" % ", ".join(model.tag))
    print("\n".join(lines))


def _split_pairs(text):
    out = {}
    for item in filter(None, (p.strip() for p in (text or "").split(";"))):
        if "=" not in item:
            raise SystemExit("error: expected NAME=VALUE, got %r" % item)
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def _load_array(spec):
    """``file.npy``, ``file.npz`` (its only array) or ``file.npz[key]``; never unpickles."""
    key = None
    if spec.endswith("]") and "[" in spec:
        spec, key = spec[:-1].split("[", 1)
    data = np.load(spec, allow_pickle=False)
    if not isinstance(data, np.lib.npyio.NpzFile):
        return data
    with data:
        if key is None:
            if len(data.files) != 1:
                raise SystemExit("error: %s holds %s; name one as %s[key]"
                                 % (spec, data.files, spec))
            key = data.files[0]
        return np.array(data[key])


def run(args):
    import eagerflow as ef

    loaded = ef.saved_model.load(args.dir)
    if args.signature_def not in loaded.signatures:
        raise SystemExit("error: SavedModel %s has no signature %r (it has: %s)" % (
            args.dir, args.signature_def, ", ".join(loaded.signatures) or "none"))
    fn = loaded.signatures[args.signature_def]
    specs = fn.structured_input_signature[1]
    feeds = {}
    for name, path in _split_pairs(args.inputs).items():
        feeds[name] = _load_array(path)
    for name, expr in _split_pairs(args.input_exprs).items():
        feeds[name] = np.array(ast.literal_eval(expr))
    tensors = {}
    for name, value in feeds.items():
        if name not in specs:
            raise SystemExit("error: signature %r has no input %r (inputs: %s)" % (
                args.signature_def, name, ", ".join(specs)))
        tensors[name] = ef.constant(value, dtype=specs[name].dtype)
    outputs = fn(**tensors)
    if args.outdir:
        os.makedirs(args.outdir, exist_ok=True)
    for name, tensor in outputs.items():
        value = tensor.numpy()
        if args.outdir:
            path = os.path.join(args.outdir, name + ".npy")
            if os.path.exists(path) and not args.overwrite:
                raise SystemExit("error: %s exists; pass --overwrite" % path)
            np.save(path, value, allow_pickle=False)
            print("Output %s is saved to %s" % (name, path))
        else:
            print("Result for output key %s:" % name)
            print(value)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m eagerflow.saved_model_cli",
        description="Inspect and run eagerflow SavedModels.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("show", help="show tag-sets, signatures and their inputs/outputs")
    p.add_argument("--dir", required=True)
    p.add_argument("--tag_set", default=None)
    p.add_argument("--signature_def", default=None)
    p.add_argument("--all", action="store_true")
    p.set_defaults(handler=show)
    p = sub.add_parser("run", help="run a signature on inputs from .npy/.npz files")
    p.add_argument("--dir", required=True)
    p.add_argument("--tag_set", default="serve")
    p.add_argument("--signature_def", default="serving_default")
    p.add_argument("--inputs", default="")
    p.add_argument("--input_exprs", default="")
    p.add_argument("--outdir", default=None)
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(handler=run)
    args = parser.parse_args(argv)
    from eagerflow import errors

    try:
        args.handler(args)
    except errors.OpError as exc:
        print("error: %s" % exc.message, file=sys.stderr)
        return 1
    return 0
