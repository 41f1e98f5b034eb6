"""The layers hold (backend < core types < ops < tape < function < libraries < distribute,
scripts/import_graph.py LAYERS): no module imports from a higher layer, and no two packages
import each other, function-local imports included."""

import functools
import importlib.util

from tests.fresh_interpreter import ROOT

_spec = importlib.util.spec_from_file_location("import_graph",
                                               ROOT / "scripts" / "import_graph.py")
graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(graph)

# The only imports allowed to break the rules, each with its reason. An entry whose import
# is gone fails the test, so the list stays the list of what is left.
ALLOWED = {
    ("eagerflow.ops.strings.string_split_ops", "eagerflow.ragged.ragged_tensor"):
        "the string split ops return RaggedTensors, and RaggedTensor computes with ops "
        "(through eagerflow._api): both are the op layer, in two packages",
    ("eagerflow.ops.io.example", "eagerflow.sparse.sparse_tensor"):
        "parsing a VarLenFeature gives a SparseTensor, and SparseTensor computes with ops "
        "(through eagerflow._api): both are the op layer, in two packages",
}


@functools.lru_cache(maxsize=1)
def _build():
    return graph.build(str(ROOT))


def _edges():
    return _build()[1]


def test_allowed_exceptions_still_exist():
    present = {(e.source, e.target) for e in _edges()}
    stale = [pair for pair in ALLOWED if pair not in present]
    assert not stale, "remove these from ALLOWED, the imports are gone: %s" % stale


def test_no_upward_imports():
    edges = [e for e in _edges() if (e.source, e.target) not in ALLOWED]
    up = graph.upward(edges)
    assert not up, "imports from a lower layer to a higher one:\n" + "\n".join(
        "  %r  [%s -> %s]" % (e, graph.LAYERS[graph.layer(e.source)][0],
                              graph.LAYERS[graph.layer(e.target)][0]) for e in up)


def test_no_cycles_between_packages():
    edges = [e for e in _edges() if (e.source, e.target) not in ALLOWED]
    cycles = graph.package_cycles(edges)
    lines = []
    for cycle in cycles:
        hops = list(zip(cycle, cycle[1:] + cycle[:1]))
        for a, b in hops:
            lines.extend("  %r" % e for e in edges
                         if graph.unit(e.source) == a and graph.unit(e.target) == b)
    assert not cycles, "packages that import each other: %s\n%s" % (
        [" -> ".join(c + c[:1]) for c in cycles], "\n".join(lines))


def test_every_package_has_a_layer():
    modules, _ = _build()
    for mod in modules:
        graph.layer(mod)  # raises KeyError naming the module and the list to add it to


def test_the_checks_catch_what_they_should(tmp_path):
    # A small tree with one upward import and one cycle: the checks must find both.
    pkg = tmp_path / "eagerflow"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "tensor.py").write_text("def f():\n    from eagerflow.ops import thing\n")
    (pkg / "ops" / "thing.py").write_text("import eagerflow.tensor\n")
    (pkg / "keras.py").write_text("import eagerflow.data\n")
    (pkg / "data.py").write_text("def g():\n    import eagerflow.keras\n")
    _, edges = graph.build(str(tmp_path))
    up = graph.upward(edges)
    assert [(e.source, e.target, e.local) for e in up] == [
        ("eagerflow.tensor", "eagerflow.ops.thing", True)]
    cycles = graph.package_cycles(edges)
    assert sorted(map(tuple, cycles)) == [("data", "keras"), ("ops", "tensor")]
    assert {(e.source, e.target) for e in graph.dodging(edges)} >= {
        ("eagerflow.tensor", "eagerflow.ops.thing"), ("eagerflow.data", "eagerflow.keras")}
