"""Math and reductions, in the style of the basics guides."""


def p_arith(tf):
    a = tf.constant([[1, 2], [3, 4]])
    b = tf.ones([2, 2], dtype=tf.int32)
    return {"add": tf.add(a, b), "mul": a * b, "matmul": a @ b, "sub": a - 1}


def p_division(tf):
    a = tf.constant([7, -7])
    return {
        "truediv": a / 2,
        "floordiv": a // 2,
        "mod": a % 3,
        "fdiv_f": tf.constant([7.0, -7.0]) // 2.0,
    }


def p_pow_sqrt(tf):
    x = tf.constant([1.0, 4.0, 9.0])
    return {"sqrt": tf.sqrt(x), "pow": x**2, "rsqrt": tf.math.rsqrt(x), "square": tf.square(x)}


def p_exp_log(tf):
    x = tf.constant([0.5, 1.0, 2.0])
    return {
        "exp": tf.exp(x),
        "log": tf.math.log(x),
        "log1p": tf.math.log1p(x),
        "expm1": tf.math.expm1(x),
    }


def p_trig(tf):
    x = tf.constant([0.0, 0.5, 1.0])
    return {
        "sin": tf.sin(x),
        "cos": tf.cos(x),
        "tan": tf.tan(x),
        "atan2": tf.math.atan2(x, 1.0 + x),
    }


def p_activations_math(tf):
    x = tf.constant([-2.0, 0.0, 3.0])
    return {
        "relu": tf.nn.relu(x),
        "sigmoid": tf.sigmoid(x),
        "tanh": tf.tanh(x),
        "softplus": tf.nn.softplus(x),
        "elu": tf.nn.elu(x),
        "leaky": tf.nn.leaky_relu(x, 0.1),
    }


def p_softmax(tf):
    x = tf.constant([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    return {"softmax": tf.nn.softmax(x), "log_softmax": tf.nn.log_softmax(x)}


def p_reduce_sum_mean(tf):
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    return {
        "sum": tf.reduce_sum(x),
        "sum0": tf.reduce_sum(x, 0),
        "mean1": tf.reduce_mean(x, axis=1),
        "keep": tf.reduce_sum(x, 1, keepdims=True),
    }


def p_reduce_max_min_prod(tf):
    x = tf.constant([[1, 5, 3], [4, 2, 6]])
    return {"max": tf.reduce_max(x), "min0": tf.reduce_min(x, 0), "prod": tf.reduce_prod(x, 1)}


def p_reduce_any_all(tf):
    x = tf.constant([[True, False], [True, True]])
    return {"any": tf.reduce_any(x, 1), "all": tf.reduce_all(x, 1), "all_all": tf.reduce_all(x)}


def p_reduce_int_mean(tf):
    return {
        "mean": tf.reduce_mean(tf.constant([1, 2])),
        "var": tf.math.reduce_variance(tf.constant([1.0, 2.0, 4.0])),
        "std": tf.math.reduce_std(tf.constant([1.0, 2.0, 4.0])),
    }


def p_logsumexp(tf):
    return {"v": tf.reduce_logsumexp(tf.constant([[0.0, 1.0], [100.0, 100.0]]), 1)}


def p_argmax_argmin(tf):
    x = tf.constant([[1.0, 9.0, 3.0], [7.0, 2.0, 7.0]])
    return {"argmax": tf.argmax(x, 1), "argmin0": tf.argmin(x, 0), "dtype": tf.argmax(x).dtype.name}


def p_cumsum_cumprod(tf):
    x = tf.constant([1, 2, 3, 4])
    return {
        "cumsum": tf.cumsum(x),
        "excl": tf.cumsum(x, exclusive=True),
        "rev": tf.cumsum(x, reverse=True),
        "cumprod": tf.math.cumprod(x),
    }


def p_matmul_variants(tf):
    a = tf.reshape(tf.range(6, dtype=tf.float32), [2, 3])
    b = tf.reshape(tf.range(6, dtype=tf.float32), [2, 3])
    return {
        "ta": tf.matmul(a, b, transpose_a=True),
        "tb": tf.matmul(a, b, transpose_b=True),
        "batched": tf.matmul(tf.ones([4, 2, 3]), tf.ones([4, 3, 5])).shape.as_list(),
    }


def p_linalg(tf):
    m = tf.constant([[4.0, 1.0], [2.0, 3.0]])
    return {
        "det": tf.linalg.det(m),
        "inv": tf.linalg.inv(m),
        "trace": tf.linalg.trace(m),
        "diag": tf.linalg.diag_part(m),
    }


def p_norm(tf):
    x = tf.constant([[3.0, 4.0], [6.0, 8.0]])
    return {"norm": tf.norm(x), "norm1": tf.norm(x, axis=1), "l2n": tf.math.l2_normalize(x, axis=1)}


def p_comparisons(tf):
    a = tf.constant([1, 2, 3])
    return {"eq": tf.equal(a, 2), "gt": a > 1, "le": tf.less_equal(a, 2), "ne": tf.not_equal(a, 3)}


def p_clip_round(tf):
    x = tf.constant([-1.5, 0.5, 1.5, 2.5])
    return {
        "clip": tf.clip_by_value(x, -1.0, 1.0),
        "round": tf.round(x),
        "floor": tf.floor(x),
        "ceil": tf.math.ceil(x),
        "sign": tf.sign(x),
        "abs": tf.abs(x),
    }


def p_maximum_minimum(tf):
    return {"max": tf.maximum([1, 5], [3, 2]), "min": tf.minimum([1.0, 5.0], 2.0)}


def p_sort_topk(tf):
    x = tf.constant([3, 1, 4, 1, 5, 9, 2])
    tk = tf.math.top_k(x, 3)
    return {
        "sort": tf.sort(x),
        "desc": tf.sort(x, direction="DESCENDING"),
        "argsort": tf.argsort(x, stable=True),
        "topk_v": tk.values,
        "topk_i": tk.indices,
    }


def p_nan_inf(tf):
    x = tf.constant([1.0, 0.0, -1.0]) / tf.constant([0.0, 0.0, 0.0])
    return {
        "isnan": tf.math.is_nan(x),
        "isinf": tf.math.is_inf(x),
        "divnonan": tf.math.divide_no_nan(1.0, tf.constant([0.0, 2.0])),
    }


def p_segment_sum(tf):
    return {
        "seg": tf.math.segment_sum(tf.constant([1, 2, 3, 4]), tf.constant([0, 0, 1, 1])),
        "unsorted": tf.math.unsorted_segment_sum(tf.constant([1.0, 2.0, 3.0]), [2, 0, 2], 3),
    }


def p_einsum(tf):
    a = tf.reshape(tf.range(6.0), [2, 3])
    return {"ij_jk": tf.einsum("ij,kj->ik", a, a), "trace": tf.einsum("ii", tf.eye(3))}


def p_add_n_square_diff(tf):
    return {
        "add_n": tf.add_n([tf.constant([1, 2]), tf.constant([3, 4]), tf.constant([5, 6])]),
        "sqdiff": tf.math.squared_difference(tf.constant([1.0, 5.0]), 3.0),
    }


def p_float_precision(tf):
    x = tf.constant(0.1, dtype=tf.float32)
    y = tf.constant(0.1, dtype=tf.float64)
    return {"f32": x * 3, "f64": y * 3}


def p_bincount_histogram(tf):
    return {
        "bincount": tf.math.bincount(tf.constant([1, 1, 3, 0])),
        "hist": tf.histogram_fixed_width(tf.constant([0.0, 0.5, 1.0, 4.9]), [0.0, 5.0], nbins=5),
    }


def _raised(fn):
    try:
        fn()
    except Exception as e:  # the class name is the result
        return type(e).__name__
    return None


def p_bincount_weights_and_lengths(tf):
    a = tf.constant([1, 1, 3, 0, 7])
    w = tf.constant([0.5, 1.0, 2.0, 3.0, 4.0])
    return {
        "minlength": tf.math.bincount(a, minlength=10),
        "maxlength": tf.math.bincount(a, maxlength=3),
        "both": tf.math.bincount(a, minlength=5, maxlength=4),
        "weights": tf.math.bincount(a, weights=w),
        "weights_f64": tf.math.bincount(a, weights=tf.cast(w, tf.float64), maxlength=2),
        "int_weights": tf.math.bincount(a, weights=[1, 2, 3, 4, 5]),
        "dtype_ignored_with_weights": tf.math.bincount(a, weights=w, dtype=tf.float64),
        "dtype": tf.math.bincount(a, dtype=tf.int64),
        "binary": tf.math.bincount(a, binary_output=True),
        "empty": tf.math.bincount(tf.constant([], tf.int32), minlength=2),
        "floats_cast": tf.math.bincount(tf.constant([1.0, 2.7])),
        "scalar": tf.math.bincount(tf.constant(2)),
    }


def p_bincount_axis(tf):
    m = tf.constant([[1, 5], [0, 0], [2, 2]])
    w = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    return {
        "flat": tf.math.bincount(m),
        "axis0": tf.math.bincount(m, axis=0),
        "rows": tf.math.bincount(m, axis=-1),
        "rows_weighted": tf.math.bincount(m, weights=w, axis=-1),
        "rows_lengths": tf.math.bincount(m, minlength=3, maxlength=4, axis=-1),
        "rows_binary": tf.math.bincount(m, binary_output=True, axis=-1),
        "rows_empty": tf.math.bincount(tf.zeros([2, 0], tf.int32), axis=-1),
    }


def p_bincount_errors(tf):
    return {
        "negative": _raised(lambda: tf.math.bincount(tf.constant([1, -1]))),
        "axis1": _raised(lambda: tf.math.bincount(tf.constant([[1, 2]]), axis=1)),
        "rank3_rows": _raised(lambda: tf.math.bincount(tf.zeros([1, 2, 2], tf.int32), axis=-1)),
        "weights_shape": _raised(lambda: tf.math.bincount(tf.constant([1, 2]),
                                                          weights=tf.constant([1.0]))),
        "binary_and_weights": _raised(lambda: tf.math.bincount(
            tf.constant([1]), weights=tf.constant([1.0]), binary_output=True)),
        "negative_maxlength": _raised(lambda: tf.math.bincount(tf.constant([1]), maxlength=-1)),
    }


def p_bincount_in_function(tf):
    @tf.function
    def f(x, w):
        return tf.math.bincount(x, weights=w, minlength=4), tf.math.bincount(x, axis=-1)

    out = f(tf.constant([[0, 2], [2, 2]]), tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    return {"weighted": out[0], "rows": out[1]}


def p_histogram_fixed_width_edges(tf):
    v = tf.constant([-1.0, 0.0, 0.5, 1.0, 4.9, 5.0, 7.0])
    return {
        "hist": tf.histogram_fixed_width(v, [0.0, 5.0], nbins=5),
        "int64": tf.histogram_fixed_width(v, [0.0, 5.0], nbins=3, dtype=tf.int64),
        "ints": tf.histogram_fixed_width(tf.constant([0, 1, 2, 9]), [0, 10], nbins=5),
        "default_bins": tf.shape(tf.histogram_fixed_width(v, [0.0, 5.0])),
        "nan": _raised(lambda: tf.histogram_fixed_width(tf.constant([float("nan")]),
                                                        [0.0, 1.0], nbins=2)),
        "bad_range": _raised(lambda: tf.histogram_fixed_width(v, [5.0, 0.0], nbins=5)),
    }


def p_bincount_ragged_and_sparse(tf):
    rt = tf.ragged.constant([[1, 2], [3]])
    st = tf.sparse.SparseTensor([[0, 0], [1, 1]], [1, 3], [2, 2])
    return {
        "ragged": tf.math.bincount(rt),
        "ragged_weighted": tf.math.bincount(rt, weights=tf.ragged.constant([[0.5, 1.0], [2.0]])),
        "sparse": tf.math.bincount(st, minlength=5),
    }


def p_histogram_fixed_width_bins(tf):
    v = tf.constant([-1.0, 0.0, 0.5, 1.0, 4.9, 5.0, 7.0])
    return {
        "bins": tf.histogram_fixed_width_bins(v, [0.0, 5.0], nbins=5),
        "matrix": tf.histogram_fixed_width_bins(tf.reshape(v[:6], [2, 3]), [0.0, 5.0], nbins=5),
        "float64": tf.histogram_fixed_width_bins(tf.constant([0.1, 0.7], tf.float64),
                                                 tf.constant([0.0, 1.0], tf.float64), nbins=3),
        "near_edge": tf.histogram_fixed_width_bins(tf.constant([0.3, 0.6, 0.9999999]),
                                                   [0.0, 1.0], nbins=3),
    }
