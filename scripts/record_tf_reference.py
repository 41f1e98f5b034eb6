"""Records reference outputs of real TensorFlow into tests/data/tf_reference/.

Run it in an environment that has tensorflow (not a dependency of eagerflow):

    python scripts/record_tf_reference.py            # everything
    python scripts/record_tf_reference.py ragged sparse ragged_broadcast  # only these parts

It writes a TFRecord file of tf.train.Examples (plain and GZIP), and JSON/NPZ files of
string-op, image.resize, TextVectorization and Normalization outputs on fixed inputs. The
tests read these files and compare eagerflow's results with them; no TensorFlow is needed
to run the tests.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "tests", "data", "tf_reference")


def _examples():
    out = []
    for i in range(4):
        feature = {
            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -i * 1000])),
            "score": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5 * i])),
            "name": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[("ex%d" % i).encode(), "\u00e9".encode()])),
            "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i)))),
        }
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return out


def record_tfrecords():
    examples = _examples()
    for name, options in (("examples.tfrecord", None), ("examples.tfrecord.gz", "GZIP")):
        with tf.io.TFRecordWriter(os.path.join(OUT, name), options) as w:
            for ex in examples:
                w.write(ex.SerializeToString())
    with tf.io.TFRecordWriter(os.path.join(OUT, "raw.tfrecord")) as w:
        for payload in (b"", b"a", b"hello world" * 50):
            w.write(payload)
    parsed = tf.io.parse_example(
        [ex.SerializeToString() for ex in examples],
        {"id": tf.io.FixedLenFeature([2], tf.int64), "score": tf.io.FixedLenFeature([], tf.float32),
         "tags": tf.io.VarLenFeature(tf.int64)})
    return {"id": parsed["id"].numpy().tolist(), "score": parsed["score"].numpy().tolist(),
            "tags_indices": parsed["tags"].indices.numpy().tolist(),
            "tags_values": parsed["tags"].values.numpy().tolist(),
            "tags_shape": parsed["tags"].dense_shape.numpy().tolist(),
            "serialized_tensor_int32": tf.io.serialize_tensor(
                tf.constant([[1, 2], [3, 4]])).numpy().hex(),
            "serialized_tensor_string": tf.io.serialize_tensor(
                tf.constant(["a", "bc"])).numpy().hex()}


def record_strings():
    words = ["", "a", "Hello", "TensorFlow", "x" * 17, "y" * 31, "z" * 33, "w" * 64,
             "v" * 65, "the quick brown fox jumps over the lazy dog " * 5, "caf\u00e9"]
    return {
        "hash_words": words,
        "hash_buckets": tf.strings.to_hash_bucket_fast(words, 2**62).numpy().tolist(),
        "format_range": tf.strings.format("tensor: {}", tf.range(10)).numpy().decode(),
        "format_float": tf.strings.format("{}", tf.constant([1.5, 2.0])).numpy().decode(),
        "format_2d": tf.strings.format("{}", tf.constant([[1, 2], [3, 4]])).numpy().decode(),
        "format_string": tf.strings.format("{}", tf.constant(["a", "b"])).numpy().decode(),
        "format_scalar_string": tf.strings.format("{}", tf.constant("s")).numpy().decode(),
        "as_string": tf.strings.as_string([1.5, -2.25]).numpy().tolist(),
        "as_string_width": tf.strings.as_string([-40, 3], width=5, fill="0").numpy().tolist(),
        "ngrams_pad": tf.strings.ngrams(["a", "b"], 3, pad_values=("<", ">")).numpy().tolist(),
        "ngrams_short": tf.strings.ngrams(tf.ragged.constant([["a", "b", "c"], ["d"]]), 3,
                                          preserve_short_sequences=True).to_list(),
        "split_ws": tf.strings.split(["  a  b ", ""]).to_list(),
        "unicode_bad": tf.strings.unicode_decode(b"a\xffb\xe2\x82", "UTF-8").numpy().tolist(),
    }


def _image():
    rng = np.random.default_rng(0)
    return rng.uniform(0, 255, size=(2, 7, 9, 3)).astype(np.float32)


def record_resize():
    img = _image()
    out = {"input": img}
    for method in ("bilinear", "nearest", "bicubic", "area", "lanczos3", "gaussian",
                   "mitchellcubic"):
        for size in ((4, 5), (13, 17)):
            for antialias in (False, True):
                key = "%s_%dx%d_%s" % (method, size[0], size[1], "aa" if antialias else "plain")
                out[key] = tf.image.resize(img, size, method=method,
                                           antialias=antialias).numpy()
    out["crop_or_pad_5x11"] = tf.image.resize_with_crop_or_pad(img, 5, 11).numpy()
    out["adjust_contrast"] = tf.image.adjust_contrast(img / 255.0, 1.7).numpy()
    out["adjust_saturation"] = tf.image.adjust_saturation(img / 255.0, 0.4).numpy()
    out["rgb_to_hsv"] = tf.image.rgb_to_hsv(img / 255.0).numpy()
    out["rgb_to_grayscale"] = tf.image.rgb_to_grayscale(img).numpy()
    out["per_image_standardization"] = tf.image.per_image_standardization(img).numpy()
    out["convert_uint8_to_float"] = tf.image.convert_image_dtype(
        img.astype(np.uint8), tf.float32).numpy()
    out["convert_float_to_uint8"] = tf.image.convert_image_dtype(
        img / 255.0, tf.uint8).numpy()
    out["central_crop_0.5"] = tf.image.central_crop(img, 0.5).numpy()
    np.savez(os.path.join(OUT, "image_ops.npz"), **out)


CORPUS = ["The cat sat on the mat.", "A dog! A DOG, barking.", "the cat and the dog",
          "Cats and dogs: friends?", "mat mat mat"]


def record_text():
    out = {"corpus": CORPUS}
    for mode, kw in (("int", {"output_sequence_length": 6}), ("multi_hot", {}),
                     ("count", {}), ("tf_idf", {}), ("int_bigrams", {"ngrams": 2})):
        layer = tf.keras.layers.TextVectorization(
            output_mode="int" if mode == "int_bigrams" else mode, **kw)
        layer.adapt(CORPUS)
        out[mode] = {"vocabulary": [v if isinstance(v, str) else v.decode()
                                    for v in layer.get_vocabulary()],
                     "output": layer(CORPUS).numpy().tolist()}
    lookup = tf.keras.layers.StringLookup()
    lookup.adapt(["b", "a", "b", "c", "b", "a"])
    out["string_lookup"] = {"vocabulary": lookup.get_vocabulary(),
                            "output": lookup(["a", "b", "z"]).numpy().tolist()}
    norm = tf.keras.layers.Normalization(axis=-1)
    data = np.array([[1.0, 10.0], [2.0, 20.0], [4.0, 40.0], [7.0, 5.0]], np.float32)
    norm.adapt(data)
    out["normalization"] = {"data": data.tolist(), "output": norm(data).numpy().tolist(),
                            "mean": np.asarray(norm.mean).tolist(),
                            "variance": np.asarray(norm.variance).tolist()}
    hashing = tf.keras.layers.Hashing(num_bins=5)
    out["hashing"] = hashing([["A"], ["B"], ["hello"]]).numpy().tolist()
    disc = tf.keras.layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    out["discretization"] = disc([[-1.5, 1.0, 3.0, 0.5]]).numpy().tolist()
    with open(os.path.join(OUT, "text_layers.json"), "w") as f:
        json.dump(out, f, indent=1)


def _value(v):
    if isinstance(v, tf.RaggedTensor):
        return {"ragged": _plain(v.to_list())}
    return {"dense": _plain(v.numpy().tolist())}


def _plain(x):
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [_plain(y) for y in x]
    return x


def record_ragged_datasets():
    out = {}
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.data.ragged_pipelines import PIPELINES

    for name, build in PIPELINES.items():
        ds = build(tf)
        spec = ds.element_spec
        out[name] = {"spec": repr(spec), "elements": [
            [_value(c) for c in e] if isinstance(e, tuple) else _value(e) for e in ds]}
    sig = tf.function(lambda x: tf.reduce_sum(x, axis=1), input_signature=[
        tf.RaggedTensorSpec([None, None], tf.int32)])
    out["function_reduce_sum"] = sig(tf.ragged.constant([[1, 2], [], [3]])).numpy().tolist()
    with open(os.path.join(OUT, "ragged_datasets.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    from tests.data.ragged_pipelines import SPARSE_PIPELINES

    sparse = {}
    for name, build in SPARSE_PIPELINES.items():
        ds = build(tf)
        sparse[name] = {"spec": repr(ds.element_spec), "elements": [
            [e.indices.numpy().tolist(), _plain(e.values.numpy().tolist()),
             e.dense_shape.numpy().tolist()] for e in ds]}
    with open(os.path.join(OUT, "sparse_datasets.json"), "w") as f:
        json.dump(sparse, f, separators=(",", ":"))
        f.write("\n")
    from tests.ragged.ragged_op_cases import CASES

    ops = {}
    for name, build in CASES.items():
        value = build(tf)
        ops[name] = {"dtype": value.dtype.name, "values": _plain(value.to_list())}
    from tests.ragged.ragged_op_cases import FROM_SPARSE, TO_SPARSE

    for name, build in TO_SPARSE.items():
        st = build(tf)
        ops["to_sparse_" + name] = [st.indices.numpy().tolist(),
                                    _plain(st.values.numpy().tolist()),
                                    st.dense_shape.numpy().tolist()]
    for name, build in FROM_SPARSE.items():
        ops["from_sparse_" + name] = _plain(build(tf).to_list())
    with open(os.path.join(OUT, "ragged_ops.json"), "w") as f:
        json.dump(ops, f, separators=(",", ":"))
        f.write("\n")


AA_METHODS = ("bilinear", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
              "mitchellcubic")
AA_SIZES = {"small": ((1, 1), (2, 3), (3, 4), (5, 2), (6, 8), (3, 9), (7, 4), (14, 18)),
            "large": ((5, 7), (11, 13), (24, 30), (17, 5), (1, 48))}


def record_resize_antialias():
    """image.resize with antialias=True over many down- and up-scaling factors."""
    rng = np.random.default_rng(1)
    inputs = {"small": _image()[:1], "large": rng.uniform(0, 255, (1, 32, 48, 2)).astype(
        np.float32)}
    out = {"input_" + k: v for k, v in inputs.items()}
    for which, img in inputs.items():
        for method in AA_METHODS:
            for h, w in AA_SIZES[which]:
                out["%s_%s_%dx%d" % (which, method, h, w)] = tf.image.resize(
                    img, (h, w), method=method, antialias=True).numpy()
    np.savez_compressed(os.path.join(OUT, "resize_antialias.npz"), **out)


HASH_WORDS = ["", "a", "Hello", "TensorFlow", "x" * 7, "y" * 8, "z" * 9, "w" * 15,
              "v" * 16, "the quick brown fox jumps over the lazy dog", "caf\u00e9"]


def record_hashing():
    """tf.strings.to_hash_bucket_strong and keras Hashing(salt=...) on fixed inputs."""
    out = {"words": HASH_WORDS, "strong": {}, "layers": {}}
    for key in ((0, 0), (1, 2), (133, 133), (2**63 - 1, 12345), (-1, -7)):
        out["strong"]["%d,%d" % key] = tf.strings.to_hash_bucket_strong(
            HASH_WORDS, 2**62, key=list(key)).numpy().tolist()
    cases = {
        "salt_int": dict(num_bins=5, salt=133),
        "salt_pair": dict(num_bins=7, salt=[5, 9]),
        "salt_mask": dict(num_bins=4, salt=42, mask_value="Hello"),
        "nosalt_mask": dict(num_bins=4, mask_value="Hello"),
    }
    for name, kw in cases.items():
        layer = tf.keras.layers.Hashing(**kw)
        out["layers"][name] = {"kwargs": kw, "output": layer(
            tf.constant([[w] for w in HASH_WORDS])).numpy().tolist()}
    ints = tf.keras.layers.Hashing(num_bins=11, salt=[3, 4], mask_value=0)
    out["layers"]["ints"] = {"kwargs": {"num_bins": 11, "salt": [3, 4], "mask_value": 0},
                             "input": [[0], [1], [-17], [123456789]],
                             "output": ints(tf.constant([[0], [1], [-17], [123456789]],
                                                        tf.int64)).numpy().tolist()}
    with open(os.path.join(OUT, "hashing.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def _sparse_or_dense(x):
    if isinstance(x, tf.sparse.SparseTensor):
        return {"indices": x.indices.numpy().tolist(), "values": _plain(x.values.numpy().tolist()),
                "dense_shape": x.dense_shape.numpy().tolist()}
    return {"dense": _plain(x.numpy().tolist()), "dtype": x.dtype.name}


def record_sparse():
    """tf.sparse on the cases of tests/sparse/sparse_cases.py, with gradients."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(OUT))))
    from tests.sparse import sparse_cases as cases

    out = {"tensorflow": tf.__version__, "ops": {}, "grads": {}}
    for name, (inputs, op) in cases.CASES.items():
        out["ops"][name] = _sparse_or_dense(op(tf, *inputs(tf)))
    for name, loss in cases.GRAD_CASES.items():
        v = tf.Variable(cases.VALUES)
        b = tf.Variable(cases.GRAD_DENSE)
        with tf.GradientTape() as tape:
            value = loss(tf, v * 1.0, b * 1.0)
        gv, gb = tape.gradient(value, [v, b])
        out["grads"][name] = {"loss": float(value.numpy()), "values": gv.numpy().tolist(),
                              "dense": None if gb is None else gb.numpy().tolist()}
    from tests.data.ragged_pipelines import PARSE_PIPELINES

    out["parse_pipelines"] = {}
    for name, build in PARSE_PIPELINES.items():
        ds = build(tf)
        elements = []
        for e in ds:
            parts = e.items() if isinstance(e, dict) else enumerate(e)
            elements.append({str(k): _sparse_or_dense(v) for k, v in parts})
        out["parse_pipelines"][name] = {"spec": repr(ds.element_spec), "elements": elements}
    with open(os.path.join(OUT, "sparse_ops.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def record_ragged_broadcast():
    """Ragged-dense broadcasting (tests/ragged/ragged_broadcast_cases.py): values, static
    shapes, errors and gradients."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(OUT))))
    from tests.ragged import ragged_broadcast_cases as cases

    out = {"tensorflow": tf.__version__, "cases": {}, "errors": {}, "grads": {}}
    for name, (inputs, op) in cases.CASES.items():
        r = op(tf, *inputs(tf))
        out["cases"][name] = {"values": r.to_list(), "shape": r.shape.as_list(),
                              "ragged_rank": r.ragged_rank, "dtype": r.dtype.name}
    for name, (inputs, op) in cases.ERRORS.items():
        try:
            op(tf, *inputs(tf))
            out["errors"][name] = None
        except (tf.errors.InvalidArgumentError, ValueError) as exc:
            out["errors"][name] = type(exc).__name__
    for name in cases.GRADS:
        inputs, op = cases.CASES[name]
        x, y = inputs(tf)
        flat = tf.Variable(x.flat_values)
        dense = tf.Variable(y)
        with tf.GradientTape() as tape:
            r = op(tf, x.with_flat_values(flat * 1.0), dense * 1.0)
            w = tf.reshape(tf.range(tf.size(r.flat_values), dtype=tf.float32),
                           tf.shape(r.flat_values)) + 1.0
            loss = tf.reduce_sum(r.flat_values * w)
        gf, gd = tape.gradient(loss, [flat, dense])
        out["grads"][name] = {"flat_values": gf.numpy().tolist(), "dense": gd.numpy().tolist()}
    with open(os.path.join(OUT, "ragged_broadcast.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def main(parts):
    os.makedirs(OUT, exist_ok=True)
    if parts:
        for part in parts:
            {"ragged": record_ragged_datasets, "hashing": record_hashing,
             "resize_aa": record_resize_antialias, "sparse": record_sparse,
             "ragged_broadcast": record_ragged_broadcast}[part]()
        print("wrote", parts)
        return
    record_ragged_datasets()
    record_hashing()
    record_resize_antialias()
    record_sparse()
    record_ragged_broadcast()
    meta = {"tensorflow": tf.__version__}
    meta["records"] = record_tfrecords()
    meta["strings"] = record_strings()
    meta["strings"] = json.loads(json.dumps(meta["strings"], default=lambda b: b.decode(
        "latin-1")))
    with open(os.path.join(OUT, "tf_values.json"), "w") as f:
        json.dump(meta, f, indent=1)
    record_resize()
    record_text()
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main(sys.argv[1:])
