"""The source transformation: one function's ``ast`` in, its converted ``ast`` out.

After :mod:`lowering` has turned jumps into flags, each ``if``, ``while`` and ``for`` becomes
calls of the runtime in :mod:`operators`, which decides when the call runs whether the
statement is Python (a Python condition or iterable) or graph control flow (a tensor one)::

    if x > 0:                        def if_body_1():
        y = x                            nonlocal y
    else:                                y = x
        y = -x                 ->    def else_body_1():
                                         nonlocal y
                                         y = -x
                                     def get_state_1(): return (y,)
                                     def set_state_1(vars_): nonlocal y; (y,) = vars_
                                     ag__.if_stmt(x > 0, if_body_1, else_body_1,
                                                  get_state_1, set_state_1, ('y',), (0,))

The state of a statement is every name it assigns; its outputs (or loop variables) are
those live afterwards (or at the loop's head), from :mod:`analysis`. A name that may be
unbound before the statement is first bound to ``ag__.Undefined(name)``, which the runtime
reports with TF's messages if it must become a tensor. ``a and b``, ``a or b``, ``not a``
and ``a if c else b`` become lazy ``ag__`` calls; every other call goes through
``ag__.converted_call`` so that functions called from converted code are converted too.

Every generated node carries the line number of the user's statement it came from, and
the code is compiled under the user's file name, so tracebacks and error messages point at
the user's lines. Only names and constants from the function's own source appear in the
generated code; nothing else is ever spliced in.
"""

from __future__ import annotations

import ast

from eagerflow.function.autograph import analysis, lowering

__all__ = ["convert_function_def"]

# Calls left alone: they inspect the calling frame or must stay literal.
_DIRECT_CALLS = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir",
                           "isinstance", "issubclass", "getattr", "hasattr", "setattr", "id",
                           "type", "callable", "repr", "str"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ag(attr):
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _call(func, args, keywords=()):
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def _tuple(elts, store=False):
    return ast.Tuple(elts=list(elts), ctx=ast.Store() if store else ast.Load())


def _str_tuple(names):
    return _tuple(ast.Constant(n) for n in names)


def _int_tuple(ints):
    return _tuple(ast.Constant(i) for i in ints)


def _lambda(body):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                         kwonlyargs=[], kw_defaults=[], kwarg=None,
                                         defaults=[]), body=body)


def _def(name, body, params=()):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    node = ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()],
                           decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:
        node.type_params = []
    return node


def _param_names(args):
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def _located(new, old):
    """``new`` with every node that has no location placed at ``old`` (the user's code)."""
    for child in ast.walk(new):
        if isinstance(child, (ast.expr, ast.stmt)) and not hasattr(child, "lineno"):
            ast.copy_location(child, old)
    return new


class _Expressions(ast.NodeTransformer):
    """Converts boolean operators, conditional expressions and calls inside expressions."""

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        kind = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _call(_ag(kind), [_lambda(value), _lambda(result)])
        return _located(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _located(_call(_ag("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return _located(_call(_ag("if_exp"), [
            node.test, _lambda(node.body), _lambda(node.orelse)]), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in _DIRECT_CALLS:
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
                func.value.id == "ag__"):
            return node
        args = _tuple(node.args)
        kw = ast.Dict(keys=[ast.Constant(k.arg) if k.arg is not None else None
                            for k in node.keywords],
                      values=[k.value for k in node.keywords])
        return _located(_call(_ag("converted_call"), [func, args, kw]), node)

    # Nested scopes are converted on their own by the statement pass.
    def visit_Lambda(self, node):
        return node

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        return node


class _Scope:
    """Per-function conversion state: liveness, parameters, globals, a name counter."""

    def __init__(self, fn, counter):
        self.params = set(_param_names(fn.args))
        self.globals = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Global):
                self.globals.update(n.names)
        self.liveness = analysis.Liveness()
        self.liveness.block(fn.body, set())
        self.counter = counter


class _Counter:
    def __init__(self):
        self.n = 0

    def next(self):
        self.n += 1
        return self.n


def convert_function_def(fn, counter=None):
    """Converts FunctionDef ``fn`` in place (and the functions nested in it); returns it."""
    counter = counter or _Counter()
    # Only lists that are locals of this function become state; appending to a closed-over
    # or global list stays a side effect (assigning it would make it a local).
    local = (analysis.assigned_names(fn.body) | set(_param_names(fn.args))) - {
        n for node in ast.walk(fn) if isinstance(node, (ast.Global, ast.Nonlocal))
        for n in node.names}
    _lower_appends(fn.body, local)
    lowering.lower_returns(fn)
    fn.body = lowering.lower_loop_jumps(fn.body)
    scope = _Scope(fn, counter)
    fn.body = _convert_block(fn.body, scope)
    return fn


def _lower_appends(stmts, local):
    """``l.append(x)`` statements become ``l = ag__.list_append(l, x)`` (``l`` is state)."""
    for node in list(_walk_statements(stmts)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                setattr(node, field, [_append_stmt(s, local) for s in block])
        for handler in getattr(node, "handlers", []):
            handler.body = [_append_stmt(s, local) for s in handler.body]
    stmts[:] = [_append_stmt(s, local) for s in stmts]


def _walk_statements(stmts):
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, _SCOPES):
            continue
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.stmt, ast.excepthandler)):
                stack.append(child)


def _append_stmt(s, local):
    if (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "append"
            and isinstance(s.value.func.value, ast.Name) and len(s.value.args) == 1
            and not s.value.keywords and s.value.func.value.id in local):
        target = s.value.func.value.id
        return _located(ast.Assign(
            targets=[_name(target, True)],
            value=_call(_ag("list_append"), [_name(target), s.value.args[0]])), s)
    return s


def _expr(node):
    return _Expressions().visit(node)


def _convert_block(stmts, scope):
    out = []
    for s in stmts:
        out.extend(_convert_stmt(s, scope))
    return out


def _convert_stmt(s, scope):
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
        s.decorator_list = [_expr(d) for d in s.decorator_list]
        if isinstance(s, ast.FunctionDef) and not _is_generator(s):
            convert_function_def(s, scope.counter)
        return [s]
    if isinstance(s, ast.ClassDef):
        return [s]
    if isinstance(s, ast.If):
        return _convert_if(s, scope)
    if isinstance(s, ast.While):
        return _convert_while(s, scope)
    if isinstance(s, ast.For):
        return _convert_for(s, scope)
    # Other compound statements: convert their blocks and expressions in place.
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            setattr(s, field, _convert_block(block, scope))
    for handler in getattr(s, "handlers", []):
        handler.body = _convert_block(handler.body, scope)
    for field, value in ast.iter_fields(s):
        if isinstance(value, ast.expr):
            setattr(s, field, _expr(value))
        elif isinstance(value, list) and value and isinstance(value[0], (ast.expr,
                                                                            ast.withitem)):
            setattr(s, field, [_expr(v) for v in value])
    return [s]


def _is_generator(fn):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await))
               for stmt in fn.body for n in analysis._walk_scope(stmt))


def _state_names(stmts, scope):
    return sorted(analysis.assigned_names(stmts) - scope.globals)


def _declare(names, stmts, scope):
    """``nonlocal`` (and ``global``) lines for a generated function that assigns ``names``."""
    out = []
    if names:
        out.append(ast.Nonlocal(names=list(names)))
    declared = sorted(analysis.assigned_names(stmts) & scope.globals)
    if declared:
        out.append(ast.Global(names=declared))
    return out


def _guards(names, scope, at):
    """Binds names that may be unbound before a converted statement to ``Undefined``."""
    out = []
    for n in names:
        if n in scope.params:
            continue
        out.append(ast.copy_location(ast.Try(
            body=[ast.Expr(value=_name(n))],
            handlers=[ast.ExceptHandler(
                type=_name("NameError"), name=None,
                body=[ast.Assign(targets=[_name(n, True)],
                                 value=_call(_ag("Undefined"), [ast.Constant(n)]))])],
            orelse=[], finalbody=[]), at))
    return out


def _state_functions(k, names):
    get = _def("get_state_%d" % k, [ast.Return(value=_tuple(_name(n) for n in names))])
    if names:
        set_body = [ast.Nonlocal(names=list(names)),
                    ast.Assign(targets=[_tuple((_name(n, True) for n in names), True)],
                               value=_name("vars_"))]
    else:
        set_body = [ast.Pass()]
    put = _def("set_state_%d" % k, set_body, ["vars_"])
    return [get, put]


def _finish(nodes, at):
    """Generated nodes take the first line of the user statement they replace."""
    for n in nodes:
        for child in ast.walk(n):
            if isinstance(child, (ast.stmt, ast.expr)) and not hasattr(child, "lineno"):
                child.lineno = child.end_lineno = at.lineno
                child.col_offset = child.end_col_offset = at.col_offset
    return nodes


def _convert_if(s, scope):
    k = scope.counter.next()
    names = _state_names(s.body + s.orelse, scope)
    live = scope.liveness.after.get(id(s), frozenset())
    outputs = [i for i, n in enumerate(names) if n in live]
    test = _expr(s.test)
    body = _declare(names, s.body, scope) + _convert_block(s.body, scope)
    orelse = _declare(names, s.orelse, scope) + _convert_block(s.orelse, scope)
    nodes = _guards(names, scope, s) + [
        _def("if_body_%d" % k, body), _def("else_body_%d" % k, orelse)
    ] + _state_functions(k, names) + [
        ast.Expr(value=_call(_ag("if_stmt"), [
            test, _name("if_body_%d" % k), _name("else_body_%d" % k),
            _name("get_state_%d" % k), _name("set_state_%d" % k), _str_tuple(names),
            _int_tuple(outputs)]))]
    return _finish(nodes, s)


def _loop_options(body):
    """Pulls ``set_loop_options(...)`` calls out of a loop body; returns (body, keywords)."""
    keywords, kept = [], []
    for stmt in body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        func = getattr(call, "func", None)
        name = getattr(func, "attr", getattr(func, "id", None))
        if isinstance(call, ast.Call) and name == "set_loop_options":
            keywords.extend(call.keywords)
        else:
            kept.append(stmt)
    return kept, keywords


def _loop_vars(s, names, scope):
    head = scope.liveness.head.get(id(s), frozenset())
    after = scope.liveness.after.get(id(s), frozenset())
    return [i for i, n in enumerate(names) if n in head or n in after]


def _opts(keywords):
    return ast.Dict(keys=[ast.Constant(k.arg) for k in keywords],
                    values=[_expr(k.value) for k in keywords])


def _convert_while(s, scope):
    k = scope.counter.next()
    body_stmts, options = _loop_options(s.body)
    names = _state_names(body_stmts, scope)
    loop_vars = _loop_vars(s, names, scope)
    body = _declare(names, body_stmts, scope) + _convert_block(body_stmts, scope)
    nodes = _guards(names, scope, s) + [
        _def("loop_test_%d" % k, [ast.Return(value=_expr(s.test))]),
        _def("loop_body_%d" % k, body),
    ] + _state_functions(k, names) + [
        ast.Expr(value=_call(_ag("while_stmt"), [
            _name("loop_test_%d" % k), _name("loop_body_%d" % k), _name("get_state_%d" % k),
            _name("set_state_%d" % k), _str_tuple(names), _int_tuple(loop_vars),
            _opts(options)]))]
    return _finish(nodes, s)


def _convert_for(s, scope):
    k = scope.counter.next()
    body_stmts, options = _loop_options(s.body)
    itr = "itr_%d" % k
    bind = ast.copy_location(ast.Assign(targets=[s.target], value=_name(itr)), s)
    names = _state_names([bind] + body_stmts, scope)
    loop_vars = _loop_vars(s, names, scope)
    body = _declare(names, body_stmts, scope) + [bind] + _convert_block(body_stmts, scope)
    flag = getattr(s, "ag_break_flag", None)
    nodes = _guards(names, scope, s)
    if flag is not None:
        nodes.append(_def("extra_test_%d" % k, [ast.Return(value=_call(
            _ag("not_"), [_name(flag)]))]))
    nodes += [_def("loop_body_%d" % k, body, [itr])] + _state_functions(k, names) + [
        ast.Expr(value=_call(_ag("for_stmt"), [
            _expr(s.iter), _name("extra_test_%d" % k) if flag else ast.Constant(None),
            _name("loop_body_%d" % k), _name("get_state_%d" % k), _name("set_state_%d" % k),
            _str_tuple(names), _int_tuple(loop_vars), _opts(options)]))]
    return _finish(nodes, s)
