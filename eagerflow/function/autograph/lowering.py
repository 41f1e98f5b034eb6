"""Rewrites jumps into flags, so that every converted block has one entry and one exit.

``cond`` and ``while_loop`` take functions that run to their end, so a ``return`` inside an
``if`` or loop, and ``break`` / ``continue``, are first rewritten as assignments to flag
variables, with the statements they would skip guarded by ``if not flag:``:

* ``return x`` inside control flow becomes ``do_return = True; retval_ = x`` (plus a
  ``break`` inside a loop); the function ends with ``return ag__.retval(retval_)``.
* ``break`` becomes ``break_ = True``; the loop's test gains ``not break_`` and its
  ``else`` clause runs under ``if not break_:``.
* ``continue`` becomes ``continue_ = True``, reset at the top of each iteration.

When one branch of an ``if`` always jumps, the statements after the ``if`` move into the
other branch instead of under a new guard (the shape TF programs expect for an early
``return``). Flags are ordinary variables, so a flag set under a tensor condition becomes a
tensor and the guards and loop tests that read it become graph control flow in turn.
"""

from __future__ import annotations

import ast

__all__ = ["lower_returns", "lower_loop_jumps", "RETVAL", "DO_RETURN"]

DO_RETURN = "do_return"
RETVAL = "retval_"
_LOOPS = (ast.While, ast.For)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _assign(id_, value):
    return ast.Assign(targets=[_name(id_, True)], value=value)


def _not(expr):
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def _ag(attr):
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _contains(stmts, kinds, cross_loops):
    """True if a statement of ``kinds`` occurs in ``stmts`` (this scope only)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, _LOOPS) and not cross_loops:
            stack.extend(n.orelse)  # a loop's own jumps belong to it, its else's do not
            continue
        stack.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt)
                     or isinstance(c, ast.excepthandler))
    return False


def _always_jumps(stmts, kinds):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, kinds):
        return True
    if isinstance(last, ast.If):
        return _always_jumps(last.body, kinds) and _always_jumps(last.orelse, kinds)
    return False


# -- return ----------------------------------------------------------------------------------
def lower_returns(fn):
    """Rewrites the ``return`` statements of FunctionDef ``fn`` if any is inside control flow."""
    nested = any(not isinstance(s, (ast.Return,) + _SCOPES) and _contains([s], ast.Return, True)
                 for s in fn.body)
    if not nested:
        return fn
    body = _lower_return_block(fn.body, in_loop=False)
    fn.body = ([_assign(DO_RETURN, ast.Constant(False)),
                _assign(RETVAL, ast.Call(func=_ag("UndefinedReturnValue"), args=[],
                                         keywords=[]))]
               + body
               + [ast.Return(value=ast.Call(func=_ag("retval"), args=[_name(RETVAL)],
                                            keywords=[]))])
    return fn


def _lower_return_block(stmts, in_loop):
    out = []
    for i, s in enumerate(stmts):
        rest = stmts[i + 1:]
        if isinstance(s, ast.Return):
            value = s.value if s.value is not None else ast.Constant(None)
            new = [ast.copy_location(_assign(DO_RETURN, ast.Constant(True)), s),
                   ast.copy_location(_assign(RETVAL, value), s)]
            if in_loop:
                new.append(ast.copy_location(ast.Break(), s))
            out.extend(new)
            return out  # what follows a return never runs
        if not _contains([s], ast.Return, True) or isinstance(s, _SCOPES):
            out.append(s)
            continue
        always_body = isinstance(s, ast.If) and _always_jumps(s.body, ast.Return)
        always_else = isinstance(s, ast.If) and _always_jumps(s.orelse, ast.Return)
        _lower_return_children(s, in_loop)
        out.append(s)
        if not rest:
            return out
        if in_loop and not isinstance(s, _LOOPS):
            continue  # the break that follows the return guards the rest of the body
        if always_body and not always_else:
            s.orelse = s.orelse + _lower_return_block(rest, in_loop)
            return out
        if always_else and not always_body:
            s.body = s.body + _lower_return_block(rest, in_loop)
            return out
        if always_body and always_else:
            return out
        if in_loop and isinstance(s, _LOOPS):
            # A return in an inner loop ends this loop too.
            out.append(ast.copy_location(
                ast.If(test=_name(DO_RETURN), body=[ast.Break()], orelse=[]), s))
            out.extend(_lower_return_block(rest, in_loop))
            return out
        out.append(ast.copy_location(ast.If(test=_not(_name(DO_RETURN)),
                                            body=_lower_return_block(rest, in_loop),
                                            orelse=[]), rest[0]))
        return out
    return out


def _lower_return_children(s, in_loop):
    if isinstance(s, _LOOPS):
        s.body = _lower_return_block(s.body, in_loop=True)
        s.orelse = _lower_return_block(s.orelse, in_loop)
        return
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if block:
            setattr(s, field, _lower_return_block(block, in_loop) or [ast.Pass()])
    for handler in getattr(s, "handlers", []):
        handler.body = _lower_return_block(handler.body, in_loop) or [ast.Pass()]


# -- break / continue ------------------------------------------------------------------------
class _Counter:
    def __init__(self):
        self.n = 0

    def next(self):
        self.n += 1
        return self.n


def lower_loop_jumps(stmts, counter=None):
    """Rewrites ``break``/``continue`` of every loop in ``stmts`` (this scope); returns stmts.

    A lowered loop that had a ``break`` carries its flag name as ``node.ag_break_flag``
    (For loops test it through ``extra_test``; While loops have it in their test).
    """
    counter = counter or _Counter()
    out = []
    for s in stmts:
        if isinstance(s, _SCOPES):
            out.append(s)
            continue
        if isinstance(s, _LOOPS):
            out.extend(_lower_loop(s, counter))
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if block and isinstance(block, list) and isinstance(block[0], ast.stmt):
                setattr(s, field, lower_loop_jumps(block, counter))
        for handler in getattr(s, "handlers", []):
            handler.body = lower_loop_jumps(handler.body, counter)
        out.append(s)
    return out


def _lower_loop(loop, counter):
    loop.body = lower_loop_jumps(loop.body, counter)
    loop.orelse = lower_loop_jumps(loop.orelse, counter)
    before, after = [], []
    k = counter.next()
    if _contains(loop.body, ast.Continue, False):
        flag = "continue_%d" % k
        loop.body = ([ast.copy_location(_assign(flag, ast.Constant(False)), loop)]
                     + _guard(loop.body, ast.Continue, flag))
    has_break = _contains(loop.body, ast.Break, False)
    if has_break:
        flag = "break_%d" % k
        before.append(ast.copy_location(_assign(flag, ast.Constant(False)), loop))
        loop.body = _guard(loop.body, ast.Break, flag)
        if isinstance(loop, ast.While):
            loop.test = ast.copy_location(
                ast.BoolOp(op=ast.And(), values=[_not(_name(flag)), loop.test]), loop.test)
        else:
            loop.ag_break_flag = flag
        if loop.orelse:
            after.append(ast.copy_location(
                ast.If(test=_not(_name(flag)), body=loop.orelse, orelse=[]), loop))
    elif loop.orelse:
        after.extend(loop.orelse)
    loop.orelse = []
    return before + [loop] + after


def _guard(stmts, kind, flag):
    """``stmts`` with each ``kind`` jump set ``flag`` and what follows it guarded."""
    out = []
    for i, s in enumerate(stmts):
        rest = stmts[i + 1:]
        if isinstance(s, kind):
            out.append(ast.copy_location(_assign(flag, ast.Constant(True)), s))
            return out
        if isinstance(s, _SCOPES) or isinstance(s, _LOOPS) or not _contains([s], kind, False):
            out.append(s)
            continue
        always_body = isinstance(s, ast.If) and _always_jumps(s.body, kind)
        always_else = isinstance(s, ast.If) and _always_jumps(s.orelse, kind)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if block:
                setattr(s, field, _guard(block, kind, flag) or [ast.Pass()])
        for handler in getattr(s, "handlers", []):
            handler.body = _guard(handler.body, kind, flag) or [ast.Pass()]
        out.append(s)
        if not rest:
            return out
        if always_body and not always_else:
            s.orelse = s.orelse + _guard(rest, kind, flag)
        elif always_else and not always_body:
            s.body = s.body + _guard(rest, kind, flag)
        elif not (always_body and always_else):
            out.append(ast.copy_location(
                ast.If(test=_not(_name(flag)), body=_guard(rest, kind, flag), orelse=[]),
                rest[0]))
        return out
    return out
