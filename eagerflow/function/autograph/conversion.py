"""Turning a Python function into its converted twin, once per code object.

:func:`convert` reads the function's source (``inspect``), parses it with ``ast``, runs the
transformation (:mod:`transformer`) and compiles the result under the function's own file
name, keeping every line number, so tracebacks and error messages show the user's lines.
The compiled code object is cached per original code object; each function object gets a
new function sharing the original's globals, defaults and closure cells (so later changes
to a closed-over variable are seen, exactly as by the original). The runtime module is
bound as the free variable ``ag__`` and never written into the user's globals.

A function that cannot be converted (no source, a generator, a lambda, a builtin) runs as
it is, which is what TF does; :func:`to_code` raises instead, naming the reason.
"""

from __future__ import annotations

import ast
import functools
import inspect
import logging
import os
import sys
import sysconfig
import textwrap
import threading
import types
import weakref

from eagerflow.function.autograph import transformer

__all__ = ["convert", "converted_call", "do_not_convert", "to_source", "ConversionError"]

_log = logging.getLogger("eagerflow.autograph")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CACHE = weakref.WeakKeyDictionary()  # code object -> (code, freevars) or an error string
_LOCK = threading.Lock()
_RUNTIME = None  # the module bound as ``ag__``
_status = threading.local()  # .active: a trace with AutoGraph on is running in this thread


class ConversionError(Exception):
    """Raised by ``to_code``/``to_graph`` when a function cannot be converted."""


def _library_dirs():
    dirs = {_PACKAGE_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
    for path in sys.path:
        if path and ("site-packages" in path or "dist-packages" in path):
            dirs.add(os.path.abspath(path))
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def _runtime():
    global _RUNTIME
    if _RUNTIME is None:
        # The ag__ namespace includes converted_call from this module, so it imports us.
        from eagerflow.function.autograph import runtime

        _RUNTIME = runtime
    return _RUNTIME


def do_not_convert(func=None):
    """Marks ``func`` so that AutoGraph never converts it (``tf.autograph.experimental``).

    Example:
        >>> import eagerflow as ef
        >>> @ef.autograph.experimental.do_not_convert
        ... def plain(x):
        ...     return x + 1
        >>> ef.function(plain)(ef.constant(1)).numpy()
        np.int32(2)
    """
    if func is None:
        return do_not_convert
    try:
        func.__ag_do_not_convert__ = True
        return func
    except (AttributeError, TypeError):
        pass

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    wrapper.__ag_do_not_convert__ = True
    return wrapper


# -- on / off for the trace running now -----------------------------------------------------
def is_active():
    """True while a function traced with ``autograph=True`` runs in this thread.

    Library code that calls user code itself (a Keras layer calling its ``call``) converts
    that user code only then.
    """
    return getattr(_status, "active", False)


class active:  # noqa: N801 - a context manager named for what it states
    """Marks the block as traced with AutoGraph on (``True``) or off (``False``)."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        self.saved = getattr(_status, "active", False)
        _status.active = self.on

    def __exit__(self, *exc):
        _status.active = self.saved


# -- conversion -------------------------------------------------------------------------------
def _source_tree(func):
    """The FunctionDef of ``func`` with original line numbers, or raises ConversionError."""
    code = getattr(func, "__code__", None)
    if code is None:
        raise ConversionError("%r is not a Python function" % (func,))
    if code.co_name == "<lambda>":
        raise ConversionError("lambdas are not converted")
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                        inspect.CO_ASYNC_GENERATOR):
        raise ConversionError("generators and coroutines are not converted")
    try:
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError) as exc:
        raise ConversionError("its source is not available (%s)" % exc) from None
    source = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(source)
    except SyntaxError as exc:
        raise ConversionError("its source could not be parsed (%s)" % exc) from None
    if not module.body or not isinstance(module.body[0], ast.FunctionDef):
        raise ConversionError("its source is not a plain `def`")
    fn = module.body[0]
    if fn.name != code.co_name:
        raise ConversionError("its source defines %r, not %r" % (fn.name, code.co_name))
    ast.increment_lineno(module, first - 1)
    fn.decorator_list = []
    return fn


def _converted_tree(func):
    fn = _source_tree(func)
    transformer.convert_function_def(fn)
    freevars = list(func.__code__.co_freevars)
    if "__class__" in freevars:
        # Zero-argument super() finds the class through this cell; keep it referenced.
        fn.body.insert(0, ast.copy_location(ast.Expr(value=ast.Name(
            id="__class__", ctx=ast.Load())), fn.body[0]))
    # A factory binds ag__ and the original free variables, so the inner function's code
    # refers to them as free variables (cells supplied when the function is made).
    factory_body = [ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                               value=ast.Constant(None)) for n in ["ag__"] + freevars]
    factory_body += [fn, ast.Return(value=ast.Name(id=fn.name, ctx=ast.Load()))]
    factory = ast.FunctionDef(name="ag__factory", args=ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
        defaults=[]), body=factory_body, decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:
        factory.type_params = []
    module = ast.Module(body=[factory], type_ignores=[])
    for node in factory_body[:-2] + [factory, factory_body[-1]]:
        node.lineno = node.end_lineno = fn.lineno
        node.col_offset = node.end_col_offset = 0
    # Nodes made inside an expression take their parent's place (the user's line).
    ast.fix_missing_locations(module)
    return module, fn


def _compile(func):
    module, fn = _converted_tree(func)
    filename = func.__code__.co_filename
    module_code = compile(module, filename, "exec")
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType)
                 and c.co_name == fn.name)
    return inner


def _cached_code(func):
    code = func.__code__
    with _LOCK:
        entry = _CACHE.get(code)
    if entry is None:
        try:
            entry = _compile(func)
        except ConversionError as exc:
            entry = str(exc)
        except Exception as exc:  # noqa: BLE001 - an unsupported construct: run as is
            entry = "conversion failed: %s: %s" % (type(exc).__name__, exc)
        with _LOCK:
            _CACHE[code] = entry
    return entry


def convert_user_code(func):
    """``convert(func)`` if ``func`` (a function or bound method) is user code, else it."""
    target = getattr(func, "__func__", func)
    if isinstance(target, types.FunctionType) and _is_user_function(target):
        return convert(func)
    return func


def convert(func, strict=False):
    """The converted twin of plain function ``func`` (``func`` itself if it cannot be)."""
    if getattr(func, "__ag_do_not_convert__", False):
        return func
    if isinstance(func, types.MethodType):
        inner = convert(func.__func__, strict)
        return func if inner is func.__func__ else types.MethodType(inner, func.__self__)
    if isinstance(func, functools.partial):
        inner = convert(func.func, strict)
        if inner is func.func:
            return func
        return functools.partial(inner, *func.args, **func.keywords)
    if not isinstance(func, types.FunctionType):
        if strict:
            raise ConversionError("%r is not a Python function" % (func,))
        return func
    entry = _cached_code(func)
    if isinstance(entry, str):
        if strict:
            raise ConversionError("AutoGraph could not convert %s: %s" % (
                getattr(func, "__qualname__", func), entry))
        _log.info("AutoGraph runs %s as it is: %s", getattr(func, "__qualname__", func),
                  entry)
        return func
    return _instantiate(func, entry)


def _instantiate(func, code):
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    cells["ag__"] = _runtime_cell()
    closure = tuple(cells[n] for n in code.co_freevars)
    new = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                             closure)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__dict__.update(func.__dict__)
    new.__doc__ = func.__doc__
    new.__qualname__ = func.__qualname__
    new.__module__ = func.__module__
    new.__annotations__ = func.__annotations__
    new.__ag_converted__ = True
    new.__wrapped_original__ = func
    return new


_CELL = None


def _runtime_cell():
    global _CELL
    if _CELL is None:
        _CELL = types.CellType(_runtime())
    return _CELL


def to_source(func):
    """The converted source of ``func`` (raises ConversionError if it cannot be)."""
    if isinstance(func, types.MethodType):
        func = func.__func__
    if not isinstance(func, types.FunctionType):
        raise ConversionError("%r is not a Python function" % (func,))
    _, fn = _converted_tree(func)
    return ast.unparse(fn) + "\n"


# -- calls from converted code ----------------------------------------------------------------
def _is_user_function(func):
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    filename = os.path.abspath(code.co_filename)
    return not filename.startswith(_LIBRARY_DIRS)


def converted_call(func, args, kwargs):
    """Calls ``func`` from converted code, converting it first if it is user code."""
    runtime = _runtime()
    special = runtime.BUILTINS.get(func) if _hashable(func) else None
    if special is not None:
        return special(*args, **kwargs)
    target = func
    if isinstance(func, types.MethodType):
        target = func.__func__
    if (isinstance(target, types.FunctionType) and _is_user_function(target)
            and not getattr(target, "__ag_converted__", False)
            and not getattr(target, "__ag_do_not_convert__", False)):
        func = convert(func)
    return func(*args, **kwargs)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True
