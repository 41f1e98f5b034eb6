"""Tensors and dtypes, as the "Introduction to Tensors" guide uses them."""

import numpy as np


def p_constant_scalar(tf):
    t = tf.constant(4)
    return {"value": t, "dtype": t.dtype.name, "shape": t.shape.as_list()}


def p_constant_float_list(tf):
    t = tf.constant([2.0, 3.0, 4.0])
    return {"value": t, "dtype": t.dtype.name, "ndim": t.ndim}


def p_constant_matrix_f16(tf):
    t = tf.constant([[1, 2], [3, 4], [5, 6]], dtype=tf.float16)
    return {"value": t, "shape": t.shape.as_list(), "dtype": t.dtype.name}


def p_constant_from_numpy_f64(tf):
    t = tf.constant(np.array([1.5, 2.5]))
    return {"dtype": t.dtype.name, "value": t}


def p_int_large_is_int64(tf):
    return {"dtype": tf.constant(2**31).dtype.name}


def p_cast_float_to_int(tf):
    return {"v": tf.cast(tf.constant([1.7, -1.7, 2.5]), tf.int32)}


def p_cast_bool(tf):
    return {"v": tf.cast(tf.constant([0.0, 1.5, -2.0]), tf.bool)}


def p_zeros_ones(tf):
    return {
        "z": tf.zeros([2, 3]),
        "o": tf.ones([2], dtype=tf.int32),
        "zl": tf.zeros_like(tf.constant([1, 2, 3])),
    }


def p_fill_range(tf):
    return {
        "fill": tf.fill([2, 2], 7),
        "range": tf.range(1, 10, 3),
        "rangef": tf.range(0.0, 1.0, 0.25),
    }


def p_linspace(tf):
    return {"v": tf.linspace(0.0, 1.0, 5)}


def p_eye(tf):
    return {"v": tf.eye(3), "rect": tf.eye(2, 3)}


def p_reshape(tf):
    x = tf.constant([[1], [2], [3]])
    r = tf.reshape(x, [1, 3])
    return {"r": r, "flat": tf.reshape(tf.range(6), [-1, 2]).shape.as_list()}


def p_transpose(tf):
    x = tf.reshape(tf.range(6), [2, 3])
    return {
        "t": tf.transpose(x),
        "perm": tf.transpose(tf.zeros([2, 3, 4]), [2, 0, 1]).shape.as_list(),
    }


def p_expand_squeeze(tf):
    x = tf.constant([1, 2, 3])
    return {
        "e0": tf.expand_dims(x, 0).shape.as_list(),
        "e1": tf.expand_dims(x, -1).shape.as_list(),
        "sq": tf.squeeze(tf.zeros([1, 3, 1])).shape.as_list(),
    }


def p_concat_stack(tf):
    a = tf.constant([[1, 2]])
    b = tf.constant([[3, 4]])
    return {
        "c0": tf.concat([a, b], 0),
        "c1": tf.concat([a, b], 1),
        "s": tf.stack([a, b]).shape.as_list(),
        "u": tf.unstack(tf.constant([[1, 2], [3, 4]])),
    }


def p_split(tf):
    x = tf.range(9)
    return {"even": tf.split(x, 3), "sizes": tf.split(x, [2, 3, 4])}


def p_tile_pad(tf):
    x = tf.constant([[1, 2]])
    return {"tile": tf.tile(x, [2, 2]), "pad": tf.pad(x, [[1, 0], [0, 2]])}


def p_shape_size_rank(tf):
    x = tf.zeros([3, 2, 4, 5])
    return {"shape": tf.shape(x), "size": tf.size(x), "rank": tf.rank(x), "ndim": x.ndim}


def p_numpy_roundtrip(tf):
    t = tf.constant([[1.0, 2.0]])
    a = t.numpy()
    return {"type": type(a).__name__, "a": a, "np_add": np.add(t, 1)}


def p_string_tensor(tf):
    t = tf.constant(["Gray wolf", "Quick brown fox"])
    return {"dtype": t.dtype.name, "shape": t.shape.as_list(), "v": t}


def p_bool_tensor(tf):
    t = tf.constant([True, False])
    return {"dtype": t.dtype.name, "not": tf.logical_not(t), "and": tf.logical_and(t, [True, True])}


def p_dtype_properties(tf):
    return {
        "f32_float": tf.float32.is_floating,
        "i32_int": tf.int32.is_integer,
        "size": tf.float64.size,
        "min": int(tf.int8.min),
        "max": int(tf.uint8.max),
        "as_np": tf.float32.as_numpy_dtype.__name__,
    }


def p_convert_to_tensor(tf):
    t = tf.convert_to_tensor([1, 2, 3], dtype=tf.float32)
    return {"v": t, "dtype": t.dtype.name}


def p_one_hot(tf):
    return {"v": tf.one_hot([0, 2, 1], 3), "on_off": tf.one_hot([1], 2, on_value=5, off_value=-1)}


def p_ragged_basic(tf):
    r = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    return {"row_lengths": r.row_lengths(), "values": r.values, "shape0": int(r.shape[0])}


def p_sparse_to_dense(tf):
    s = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    return {"dense": tf.sparse.to_dense(s)}


def p_identity_copy(tf):
    x = tf.constant([1.0, 2.0])
    return {"v": tf.identity(x)}


def p_complex(tf):
    c = tf.complex(tf.constant([1.0, 2.0]), tf.constant([3.0, -1.0]))
    return {
        "dtype": c.dtype.name,
        "real": tf.math.real(c),
        "imag": tf.math.imag(c),
        "abs": tf.abs(c),
    }


def p_unit8_wrap(tf):
    return {"v": tf.cast(tf.constant([300, -1]), tf.uint8)}
