"""The generated namespaces and the package layout: what ``import`` sees."""

import importlib

from eagerflow.ops import family_modules
from tests.fresh_interpreter import ROOT, run_python


def test_generated_namespaces_are_current():
    # Each namespace file is generated from the op families' EXPORTS: a family that exports
    # a new name, or a name that moved, makes --check fail until gen_api.py is run.
    out = run_python("""
        import runpy, sys
        sys.argv = ["gen_api.py", "--check"]
        try:
            runpy.run_path(%r, run_name="__main__")
        except SystemExit as exc:
            print("EXIT", exc.code)
    """ % str(ROOT / "scripts" / "gen_api.py"))
    assert "EXIT 0" in out, out


def test_op_families_are_found_by_walking_the_package():
    names = family_modules()
    # one family per subpackage, no re-export modules beside them
    for expected in ("eagerflow.ops.math.unary_math", "eagerflow.ops.nn.pool_ops",
                     "eagerflow.ops.random.random_stateless", "eagerflow.ops.linalg.einsum_ops"):
        assert expected in names
    for gone in ("eagerflow.ops.math_ops", "eagerflow.ops.array_ops", "eagerflow.ops.nn_ops"):
        assert gone not in names
    for name in names:
        importlib.import_module(name)


def test_function_submodules_are_importable():
    out = run_python("""
        import eagerflow.function.placement
        import eagerflow as ef
        print(ef.function.placement.place is eagerflow.function.placement.place)
        print(float(ef.function(lambda x: x + 1.0)(ef.constant(1.0))))
    """)
    assert out.split() == ["True", "2.0"]
