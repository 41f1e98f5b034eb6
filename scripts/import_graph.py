"""The static import graph of ``eagerflow``, with function-local imports, checked against the
layers (backend < core types < ops < tape < function < libraries < distribute; see
``LAYERS`` below).

Every ``import`` statement in every module is read with :mod:`ast`, module level or inside a
function. The graph is then checked for

* upward imports: a module importing one of a higher layer (``variables`` importing an op
  family, ``ops`` importing ``function``);
* cycles between packages (``eagerflow.X`` units: a subpackage or a top-level module);
* dodging imports: a function-local import that would close a module cycle if it were
  written at module level.

``tests/test_layering.py`` runs the same checks (with its list of allowed exceptions);
this script prints them.

Usage: ``python scripts/import_graph.py [-v]``
"""

from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Units (``eagerflow.X``) by layer, lowest first. A unit not listed is an error, so a new
# package has to say where it sits.
LAYERS = (
    # io (atomic writes, bounded reads of untrusted files) imports only errors.
    ("L0 backend", ("_launch_env", "errors", "nest", "backend", "io")),
    ("L1 core", ("dtypes", "tensor_shape", "tensor", "framework", "variables", "indexed_slices")),
    ("L2 ops", ("ops", "_api", "math", "nn", "linalg", "random", "bitwise", "strings", "ragged",
                "sparse", "image", "utils")),
    ("L3 tape", ("tape", "tape_entry", "tape_replay", "tape_backward", "tape_explain",
                 "tape_jacobian", "autodiff", "custom_gradient")),
    # The root package is the core namespace: it imports function and below, never the
    # libraries (those load lazily on attribute access), so the libraries may import it.
    ("L4 function", ("function", "autograph", "module", "config", "experimental", "debugging",
                     "types", "__init__")),
    ("L5 libraries", ("keras", "data", "saved_model", "train", "summary", "profiler",
                      "testing")),
    ("L6 distribute", ("distribute",)),
    ("L7 entry points", ("benchmarks", "saved_model_cli")),
)
LAYER_OF = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def module_files(root=ROOT):
    """Returns {module name: path} for every eagerflow module."""
    out = {}
    base = os.path.join(root, "eagerflow")
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if not fn.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, fn), root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join(rel)] = os.path.join(dirpath, fn)
    return out


class Edge:
    """One import: ``source`` imports ``target`` at ``line``; ``local`` if inside a function."""

    __slots__ = ("source", "target", "line", "local")

    def __init__(self, source, target, line, local):
        self.source, self.target, self.line, self.local = source, target, line, local

    def __repr__(self):
        return "%s:%d -> %s%s" % (self.source, self.line, self.target,
                                  " (local)" if self.local else "")


def _resolve(name, modules):
    """The longest existing module prefix of a dotted name."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in modules:
            return cand
        parts.pop()
    return None


def _edges_of(mod, path, modules):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_pkg = path.endswith("__init__.py")
    package = mod if is_pkg else mod.rpartition(".")[0]
    edges = []

    def visit(node, local):
        for child in ast.iter_child_nodes(node):
            inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "eagerflow":
                        tgt = _resolve(alias.name, modules)
                        if tgt:
                            edges.append(Edge(mod, tgt, child.lineno, local))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    if child.level > 1:
                        base = base[:-(child.level - 1)]
                    src = ".".join(base + ([child.module] if child.module else []))
                else:
                    src = child.module or ""
                if src.split(".")[0] != "eagerflow":
                    continue
                for alias in child.names:
                    tgt = _resolve(src + "." + alias.name, modules) or _resolve(src, modules)
                    if tgt:
                        edges.append(Edge(mod, tgt, child.lineno, local))
            visit(child, inner)

    visit(tree, False)
    return [e for e in edges if e.target != mod]


def build(root=ROOT):
    """Returns (modules, edges) for the tree at ``root``."""
    modules = module_files(root)
    edges = []
    for mod, path in modules.items():
        edges.extend(_edges_of(mod, path, modules))
    return modules, edges


def unit(mod):
    """``eagerflow.ops.math.unary`` -> ``ops``; the root package is ``__init__``."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(mod):
    u = unit(mod)
    if u not in LAYER_OF:
        raise KeyError("module %s: unit %r has no layer in scripts/import_graph.py LAYERS"
                       % (mod, u))
    return LAYER_OF[u]


def upward(edges):
    """Imports from a lower layer to a higher one."""
    return [e for e in edges if layer(e.target) > layer(e.source)]


def _sccs(nodes, succ):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(succ.get(start, ())))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def unit_graph(edges):
    succ = {}
    for e in edges:
        a, b = unit(e.source), unit(e.target)
        if a != b:
            succ.setdefault(a, set()).add(b)
    return succ


def package_cycles(edges):
    """Elementary cycles between units, each as a list of units (smallest unit first)."""
    succ = unit_graph(edges)
    nodes = sorted(set(succ) | {b for bs in succ.values() for b in bs})
    cycles = []

    def walk(start, members, path, seen):
        for w in sorted(succ.get(path[-1], ())):
            if w not in members or w < start:
                continue
            if w == start:
                cycles.append(list(path))
            elif w not in seen:
                seen.add(w)
                path.append(w)
                walk(start, members, path, seen)
                path.pop()
                seen.discard(w)

    for comp in _sccs(nodes, succ):
        if len(comp) < 2:
            continue
        for start in comp:  # the cycles whose smallest member is ``start``
            walk(start, set(comp), [start], {start})
    return cycles


def _reach(succ, start):
    seen, todo = {start}, [start]
    while todo:
        v = todo.pop()
        for w in succ.get(v, ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def dodging(edges):
    """Function-local imports whose target already reaches the importer at module level.

    Only written imports count (a package's ``__init__`` importing its children is not
    followed back up), and the root package is left out of the walk: it imports every core
    module, so every module would otherwise reach every other one through it.
    """
    succ = {}
    for e in edges:
        if not e.local and e.target != "eagerflow":
            succ.setdefault(e.source, set()).add(e.target)
    out = []
    cache = {}
    for e in edges:
        if not e.local:
            continue
        if e.target not in cache:
            cache[e.target] = _reach(succ, e.target)
        if e.source in cache[e.target]:
            out.append(e)
    return out


def directory(mod, modules_are_packages):
    """The directory (package) a module sits in: ``eagerflow.ops.math.unary`` -> ``...math``."""
    return mod if mod in modules_are_packages else mod.rpartition(".")[0]


def directory_cycles(modules, edges):
    """Strongly connected groups of directories (package folders), local imports included."""
    pkgs = {m for m, p in modules.items() if p.endswith("__init__.py")}
    succ = {}
    for e in edges:
        a, b = directory(e.source, pkgs), directory(e.target, pkgs)
        if a != b:
            succ.setdefault(a, set()).add(b)
    nodes = sorted(set(succ) | {b for bs in succ.values() for b in bs})
    return [c for c in _sccs(nodes, succ) if len(c) > 1]


def module_cycles(edges):
    """Strongly connected groups of modules, function-local imports included."""
    succ = {}
    for e in edges:
        succ.setdefault(e.source, set()).add(e.target)
    nodes = sorted(set(succ) | {b for bs in succ.values() for b in bs})
    return [c for c in _sccs(nodes, succ) if len(c) > 1]


def report(root=ROOT, verbose=False):
    modules, edges = build(root)
    up = upward(edges)
    cyc = package_cycles(edges)
    dodge = dodging(edges)
    local = [e for e in edges if e.local]
    print("modules: %d, import edges: %d (%d function-local)" % (
        len(modules), len(edges), len(local)))
    print("upward imports: %d (%d function-local)" % (len(up), sum(e.local for e in up)))
    print("package cycles: %d" % len(cyc))
    print("function-local imports that dodge a cycle: %d" % len(dodge))
    dcyc = directory_cycles(modules, edges)
    mcyc = module_cycles(edges)
    print("directory cycles (strongly connected groups): %d, modules in module cycles: %d "
          "in %d groups" % (len(dcyc), sum(map(len, mcyc)), len(mcyc)))
    if verbose:
        for e in up:
            print("  up   %r   [%s -> %s]" % (e, LAYERS[layer(e.source)][0],
                                             LAYERS[layer(e.target)][0]))
        for c in cyc:
            print("  cycle", " -> ".join(c + [c[0]]))
        for e in dodge:
            print("  dodge %r" % e)
        for c in dcyc:
            print("  directory cycle", c)
    return up, cyc, dodge


if __name__ == "__main__":
    report(verbose="-v" in sys.argv)
