"""Placement: explicit scopes, colocation with variables, the cost-based placer, printing.

Tests that need several logical CPUs run in a fresh interpreter that splits the CPU first
(the device layout freezes once used); the rest run here, on the one CPU of this process.
"""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import eagerflow as ef
from eagerflow import errors
from eagerflow.function import multi_device, placement
from eagerflow.function.executor import Executor

ROOT = pathlib.Path(__file__).resolve().parents[2]
CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"

PRELUDE = """
import numpy as np
import eagerflow as ef
cpu = ef.config.list_physical_devices("CPU")[0]
ef.config.set_logical_device_configuration(
    cpu, [ef.config.LogicalDeviceConfiguration()] * 3)
from eagerflow.function import multi_device, partition, placement
from eagerflow.function.executor import Executor
CPU = "/job:localhost/replica:0/task:0/device:CPU:%d"

def names(graph, where):
    return {n.name: where[n.id].name for n in graph.nodes}
"""


def run_split(code, helpers="", env=None):
    """Runs ``code`` after splitting the CPU into 3 logical devices; returns its stdout."""
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    result = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(helpers)
                             + textwrap.dedent(code)],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "OK", result.stdout
    return result.stdout


def test_explicit_placement_full_and_partial_names():
    run_split("""
    @ef.function
    def f(x):
        with ef.device("/job:localhost/replica:0/task:0/device:CPU:1"):
            a = ef.tanh(x)
        with ef.device("/cpu:2"):
            b = ef.sin(x)
        with ef.device("/device:CPU:0"):
            c = a * b
        with ef.device("/cpu"):      # any CPU: the placer chooses
            d = ef.exp(c)
        return d
    graph = f.get_concrete_function(ef.TensorSpec([4])).graph
    where = names(graph, placement.place(graph))
    assert where["tanh"] == CPU % 1 and where["sin"] == CPU % 2 and where["mul"] == CPU % 0
    assert where["exp"] in (CPU % 0, CPU % 1, CPU % 2)
    x = ef.constant([0.1, 0.2, 0.3, 0.4])
    want = np.exp(np.tanh(x.numpy()) * np.sin(x.numpy()))
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6)
    print("OK")
    """)


def test_absent_gpu_soft_placement_falls_back_to_cpu_with_a_log_line(caplog):
    if ef.config.list_physical_devices("GPU"):
        pytest.skip("a GPU is present")
    @ef.function
    def g(x):
        with ef.device("/gpu:0"):
            return ef.tanh(x) + 1.0

    graph = g.get_concrete_function(ef.TensorSpec([2])).graph
    with caplog.at_level(logging.INFO, logger="eagerflow"):
        where = placement.place(graph)
    assert {d.name for d in where.values()} == {CPU % 0}
    assert any("Soft placement" in r.getMessage() and "/device:GPU:0" in r.getMessage()
               for r in caplog.records)


def test_absent_gpu_hard_placement_names_node_and_device():
    if ef.config.list_physical_devices("GPU"):
        pytest.skip("a GPU is present")

    @ef.function
    def g(x):
        with ef.device("/gpu:0"):
            return ef.tanh(x)

    graph = g.get_concrete_function(ef.TensorSpec([2])).graph
    ef.config.set_soft_device_placement(False)
    try:
        with pytest.raises(errors.InvalidArgumentError, match=r"tanh.*GPU:0"):
            placement.place(graph)
    finally:
        ef.config.set_soft_device_placement(True)


def test_colocation_with_variables_and_stateful_ops_pinned():
    run_split("""
    with ef.device("/cpu:2"):
        v = ef.Variable([1.0, 2.0])
    with ef.device("/cpu:1"):
        w = ef.Variable([3.0, 4.0])

    @ef.function
    def f(x):
        with ef.device("/cpu:1"):          # a conflicting request: the variable wins
            y = v.read_value() * x
        v.assign_add(y)
        w.assign(ef.tanh(w) + x)
        ef.print(y)
        return w.read_value() + y

    graph = f.get_concrete_function(ef.TensorSpec([2])).graph
    where = placement.place(graph)
    for node in graph.nodes:
        if node.op in ("ReadVariableOp", "AssignAddVariableOp", "AssignVariableOp"):
            var = graph.variables[node.attrs["variable"]]
            assert where[node.id] is var._device, (node.name, where[node.id])
        if node.op == "Print":
            assert where[node.id].name == CPU % 0
    assert {where[n.id].name for n in graph.nodes if n.op == "ReadVariableOp"} == {
        CPU % 1, CPU % 2}
    out = f(ef.constant([1.0, 1.0]))
    np.testing.assert_allclose(v.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(w.numpy(), np.tanh([3.0, 4.0]) + 1.0, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), np.tanh([3.0, 4.0]) + 2.0 + [0.0, 1.0],
                               rtol=1e-6)
    print("OK")
    """)


def test_cost_placer_splits_heavy_independent_chains_and_keeps_tiny_graphs():
    run_split("""
    def chains(a, b):
        x, y = a, b
        for _ in range(3):
            x = ef.matmul(x, a)
            y = ef.matmul(y, b)
        return x + y
    f = ef.function(chains)
    spec = ef.TensorSpec([512, 512])
    graph = f.get_concrete_function(spec, spec).graph
    where = placement.place(graph)
    first = [where[n.id] for n in graph.nodes if n.op == "MatMul" and n.inputs[1][0].name == "a"]
    second = [where[n.id] for n in graph.nodes if n.op == "MatMul" and n.inputs[1][0].name == "b"]
    assert len(set(first)) == 1 and len(set(second)) == 1 and first[0] is not second[0]
    assert isinstance(f.get_concrete_function(spec, spec).executor,
                      multi_device.MultiDeviceExecutor)

    # The same graph on tiny shapes, and a small chain: one device, the plain executor.
    small = ef.TensorSpec([4, 4])
    tiny = f.get_concrete_function(small, small)
    assert len({d for d in placement.place(tiny.graph).values()}) == 1
    assert type(tiny.executor) is Executor
    g = ef.function(lambda x: ef.tanh(x) * 2.0 + ef.sin(x))
    graph = g.get_concrete_function(ef.TensorSpec([8])).graph
    assert {d.name for d in placement.place(graph).values()} == {CPU % 0}
    print("OK")
    """)


def test_node_costs_follow_the_shapes():
    f = ef.function(lambda a, b: ef.reduce_sum(ef.matmul(a, b)) + ef.tanh(a)[0, 0])
    graph = f.get_concrete_function(ef.TensorSpec([8, 16]), ef.TensorSpec([16, 4])).graph
    cost = {n.op: placement.node_cost(n) for n in graph.nodes}
    assert cost["MatMul"] == 2 * 8 * 4 * 16
    assert cost["Sum"] == 8 * 4
    assert cost["Tanh"] == 8 * 16
    conv = ef.function(lambda x, k: ef.nn.conv2d(x, k, 1, "SAME"))
    graph = conv.get_concrete_function(ef.TensorSpec([2, 8, 8, 3]),
                                       ef.TensorSpec([3, 3, 3, 5])).graph
    node = [n for n in graph.nodes if n.op == "Conv"][0]
    assert placement.node_cost(node) == 2 * (2 * 8 * 8 * 5) * (3 * 3 * 3)


def test_format_and_log_device_placement(caplog):
    f = ef.function(lambda x: -x)
    graph = f.get_concrete_function(ef.TensorSpec([2])).graph
    where = placement.place(graph)
    assert placement.format_placement(graph, where).splitlines() == [
        "x -> " + CPU % 0, "neg -> " + CPU % 0]
    ef.config.set_log_device_placement(True)
    try:
        with caplog.at_level(logging.INFO, logger="eagerflow"):
            placement.place(graph)
    finally:
        ef.config.set_log_device_placement(False)
    assert any("neg -> " + CPU % 0 in r.getMessage() for r in caplog.records)


def test_single_device_graphs_keep_the_plain_executor():
    f = ef.function(lambda x: ef.tanh(x) + 1.0)
    cf = f.get_concrete_function(ef.TensorSpec([3]))
    assert type(cf.executor) is Executor
    assert type(multi_device.make_executor(cf.graph)) is Executor
