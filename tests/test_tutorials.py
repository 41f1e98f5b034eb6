"""The tutorials and the docstring examples run, and say what they claim.

* Every ``tutorials/*.md`` page: its ```` ```python ```` blocks run in order, in one namespace,
  in a fresh interpreter per page (pages cannot leak state such as a logical device
  configuration into each other or into this process), with a temporary working directory.
  A failure names the page, the block and the line, with the traceback.
* ``tutorials/quickstart.py`` trains to a test accuracy of at least 0.95.
* The ``Example:`` sections of eagerflow's docstrings pass as doctests (one interpreter for
  all of them, one test per module).

This file is also the script the subprocesses run::

    python tests/test_tutorials.py --page tutorials/gradients.md
    python tests/test_tutorials.py --doctest
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "tutorials"
PAGES = sorted(p for p in TUTORIALS.glob("*.md") if p.name != "README.md")  # README: an index
PAGE_TIMEOUT_S = 180
QUICKSTART_TIMEOUT_S = 600
DOCTEST_TIMEOUT_S = 300

# Packages whose docstrings other work is still changing, or that are not API (benchmarks).
DOCTEST_EXCLUDED = ("eagerflow.benchmarks",)

_FENCE = re.compile(r"^```(\S*)\s*$")


# -- code extraction --------------------------------------------------------------------------
def python_blocks(text):
    """Returns ``[(first_line, code), ...]`` for the ```` ```python ```` blocks of a page.

    ``first_line`` is the 1-based line of the block's first code line, so that compiling the
    code padded with that many newlines gives tracebacks with the page's own line numbers.
    Blocks in other languages (``bash``, ``text``...) are skipped.
    """
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        language = match.group(1).lower()
        start = i + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError("unclosed ``` fence opened at line %d" % (i + 1))
        if language in ("python", "py"):
            blocks.append((start + 1, "\n".join(lines[start:end]) + "\n"))
        i = end + 1
    return blocks


def _run_page(path):
    """Runs one page's blocks in one namespace; exit status 1 and a report on failure."""
    import traceback

    path = pathlib.Path(path).resolve()
    blocks = python_blocks(path.read_text())
    if not blocks:
        print("FAILED: %s has no ```python blocks" % path.name, file=sys.stderr)
        return 1
    namespace = {"__name__": "__main__", "__file__": str(path)}
    for number, (line, code) in enumerate(blocks, 1):
        try:
            exec(compile("\n" * (line - 1) + code, str(path), "exec"), namespace)  # noqa: S102
        except BaseException:  # noqa: BLE001 - report anything, including SystemExit
            sys.stdout.flush()
            print("FAILED: %s, block %d of %d (starting at line %d):\n%s"
                  % (path.name, number, len(blocks), line, traceback.format_exc()),
                  file=sys.stderr)
            return 1
    print("OK: %s, %d blocks" % (path.name, len(blocks)))
    return 0


def _subprocess(args, tmp_path, timeout):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONHASHSEED", "0")
    try:
        return subprocess.run([sys.executable] + args, cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail("%s did not finish within %d s.\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(args), timeout, exc.stdout or "", exc.stderr or ""))


# -- tutorials --------------------------------------------------------------------------------
def test_tutorial_pages_exist():
    names = {p.name for p in PAGES}
    assert {"gradients.md", "tensors_and_devices.md"} <= names, sorted(names)


def test_block_extraction():
    text = ("# t\n\n```python\nx = 1\n```\n\ntext\n\n```bash\nls\n```\n"
            "```python\ny = x + 1\nassert y == 2\n```\n")
    assert python_blocks(text) == [(4, "x = 1\n"), (13, "y = x + 1\nassert y == 2\n")]
    with pytest.raises(ValueError, match="line 3"):
        python_blocks("a\n\n```python\nx = 1\n")


def test_failing_block_reports_page_block_and_line(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("```python\nx = 1\n```\n\n"
                    "```python\ny = x\nassert y == 2, 'y is %d' % y\n```\n")
    result = _subprocess([__file__, "--page", str(page)], tmp_path, PAGE_TIMEOUT_S)
    assert result.returncode == 1
    assert "broken.md, block 2 of 2 (starting at line 6)" in result.stderr
    assert "line 7" in result.stderr and "AssertionError: y is 1" in result.stderr


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_tutorial_page_runs(page, tmp_path):
    result = _subprocess([__file__, "--page", str(page)], tmp_path, PAGE_TIMEOUT_S)
    if result.returncode != 0:
        pytest.fail("tutorial %s failed:\n%s\n--- stdout ---\n%s" % (
            page.name, result.stderr, result.stdout[-4000:]), pytrace=False)
    assert result.stdout.strip().splitlines()[-1].startswith("OK: %s" % page.name)


def test_quickstart_reaches_95_percent(tmp_path):
    result = _subprocess([str(TUTORIALS / "quickstart.py")], tmp_path, QUICKSTART_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    found = re.findall(r"^test accuracy: ([0-9.]+)", result.stdout, flags=re.M)
    assert found, "no 'test accuracy: X' line in:\n" + result.stdout
    assert float(found[-1]) >= 0.95, result.stdout


# -- docstring examples -----------------------------------------------------------------------
def doctest_modules():
    """Module names under eagerflow/ whose docstrings are checked (found without importing)."""
    names = []
    for path in sorted((ROOT / "eagerflow").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__" or path.name.endswith("_pb2.py"):
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if name.startswith(DOCTEST_EXCLUDED):
            continue
        names.append(name)
    return names


def _run_doctests(names):
    """Runs every module's docstring examples; returns {module: result} for JSON."""
    import doctest
    import importlib
    import traceback

    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    finder = doctest.DocTestFinder(exclude_empty=True)
    results = {}
    modules = {}
    for name in names:
        results[name] = {"examples": 0, "failures": []}
        try:
            modules[name] = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an import failure is this module's failure
            results[name]["failures"].append("import failed:\n" + traceback.format_exc())
    tested = set()
    for name, module in modules.items():
        tests = finder.find(module, name, globs={"__name__": name})
        tested.update(id(t.docstring) for t in tests)
        _run_tests(tests, results[name], flags)
    # A function whose __module__ names a namespace that does not hold it (generated
    # namespaces) is skipped by DocTestFinder everywhere: test it where it is defined.
    for name, module in modules.items():
        for attr, obj in sorted(vars(module).items()):
            if not callable(obj) or not str(getattr(obj, "__module__", "")).startswith(
                    "eagerflow"):
                continue
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or ">>>" not in doc or id(doc) in tested:
                continue
            tested.add(id(doc))
            tests = finder.find(obj, "%s.%s" % (name, attr), module=False,
                                globs={"__name__": name})
            _run_tests(tests, results[name], flags)
    return results


def _run_tests(tests, report, flags):
    import doctest
    import io

    for test in sorted(tests, key=lambda t: t.name):
        if not test.examples:
            continue
        out = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=flags)
        result = runner.run(test, out=out.write, clear_globs=True)
        report["examples"] += result.attempted
        if result.failed:
            report["failures"].append(out.getvalue())


@pytest.fixture(scope="module")
def doctest_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("doctest")
    result = _subprocess([__file__, "--doctest"], tmp, DOCTEST_TIMEOUT_S)
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("{")]
    if result.returncode != 0 or not lines:
        pytest.fail("the doctest run crashed:\n%s\n%s" % (result.stdout[-4000:], result.stderr))
    return json.loads(lines[-1])


def test_doctest_module_list():
    names = doctest_modules()
    assert {"eagerflow", "eagerflow.tensor", "eagerflow.ops.math.arithmetic", "eagerflow.tape"} \
        <= set(names)
    assert not [n for n in names if n.startswith(DOCTEST_EXCLUDED)]


@pytest.mark.parametrize("module", doctest_modules())
def test_docstring_examples(module, doctest_results):
    report = doctest_results.get(module)
    assert report is not None, "%s was not run by the doctest subprocess" % module
    if report["failures"]:
        pytest.fail("docstring examples of %s failed:\n%s"
                    % (module, "\n".join(report["failures"])), pytrace=False)


def _main(argv):
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing
    if len(argv) == 2 and argv[0] == "--page":
        return _run_page(argv[1])
    if argv == ["--doctest"]:
        print(json.dumps(_run_doctests(doctest_modules())))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
