"""Layers below distribute reach strategies only through framework.strategy_context."""

import ast
import pathlib

from tests.fresh_interpreter import ROOT, run_python_ok


def test_no_module_below_distribute_imports_it():
    below = [p for p in (ROOT / "eagerflow").rglob("*.py")
             if "distribute" not in p.relative_to(ROOT / "eagerflow").parts[:1]
             and "benchmarks" not in p.parts]
    offenders = []
    for path in below:
        tree = ast.parse(pathlib.Path(path).read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [node.module + "." + a.name for a in node.names]
            if any(n == "eagerflow.distribute" or n.startswith("eagerflow.distribute.")
                   for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


def test_keras_training_does_not_load_distribute(tmp_path):
    run_python_ok("""
        import sys
        import numpy as np
        from eagerflow import keras
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        m.compile("adam", "mse")
        m.fit(np.ones((8, 3)), np.ones((8, 2)), verbose=0)
        assert "eagerflow.distribute" not in sys.modules, "keras loaded distribute"
        print("OK")
    """, tmp_path)
