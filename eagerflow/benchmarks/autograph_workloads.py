"""What AutoGraph costs at trace time.

* ``@function trace, Python control flow: AutoGraph on vs off``: the same function, whose
  ``if``/``for`` run on Python values (so both trace the same graph), traced with
  ``autograph=True`` (the eagerflow column) and ``autograph=False`` (the numpy column):
  the overhead of running converted code while tracing.
* ``@function trace, tensor if/while: AutoGraph vs hand-written``: a function with an
  ``if`` and a ``while`` on tensors, converted (eagerflow column), against the same graph
  written with ``cond``/``while_loop`` by hand under ``autograph=False`` (numpy column).
* ``AutoGraph conversion of one function``: parse, transform and compile with the cache
  cleared (eagerflow column) against a cached lookup (numpy column); paid once per function.
"""

from __future__ import annotations

import eagerflow as ef
from eagerflow.function.autograph import conversion


def _python_flow(x, depth, use_bias):
    for k in range(depth):
        if use_bias and k % 2 == 0:
            x = ef.tanh(x) + 0.5
        else:
            x = ef.sigmoid(x) * 2.0
    return ef.reduce_sum(x)


def _tensor_flow(x, n):
    total = ef.reduce_sum(x)
    if total > 0.0:
        x = x * 2.0
    else:
        x = -x
    i = ef.constant(0)
    while i < n:
        x = ef.tanh(x) + 0.1
        i += 1
    return x


def _hand_written(x, n):
    total = ef.reduce_sum(x)
    x = ef.cond(total > 0.0, lambda: x * 2.0, lambda: -x)
    _, x = ef.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, ef.tanh(x) + 0.1),
                         (ef.constant(0), x))
    return x


def _trace(python_fn, autograph, *args):
    return lambda: ef.function(python_fn, autograph=autograph).get_concrete_function(*args)


def autograph_python_flow_trace():
    x = ef.TensorSpec([16], ef.float32)
    return {"eagerflow": _trace(_python_flow, True, x, 20, True),
            "numpy": _trace(_python_flow, False, x, 20, True)}


def autograph_tensor_flow_trace():
    x, n = ef.TensorSpec([16], ef.float32), ef.TensorSpec([], ef.int32)
    return {"eagerflow": _trace(_tensor_flow, True, x, n),
            "numpy": _trace(_hand_written, False, x, n)}


def autograph_conversion():
    def fresh():
        conversion._CACHE.pop(_tensor_flow.__code__, None)
        return conversion.convert(_tensor_flow)

    return {"eagerflow": fresh, "numpy": lambda: conversion.convert(_tensor_flow)}


AUTOGRAPH_WORKLOADS = []


def _register(workload_cls):
    AUTOGRAPH_WORKLOADS.extend([
        workload_cls("@function trace, Python control flow: AutoGraph on vs off",
                     autograph_python_flow_trace, note="numpy column = autograph=False"),
        workload_cls("@function trace, tensor if/while: AutoGraph vs hand-written",
                     autograph_tensor_flow_trace,
                     note="numpy column = cond/while_loop by hand"),
        workload_cls("AutoGraph conversion of one function", autograph_conversion,
                     note="numpy column = cached lookup"),
    ])
    return AUTOGRAPH_WORKLOADS
