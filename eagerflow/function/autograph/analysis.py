"""Static facts about a function's source that AutoGraph's conversion needs.

Two questions, answered on the ``ast`` of one function scope (nested ``def``, ``lambda``,
``class`` and comprehension bodies are other scopes and are not entered):

* which names a statement list *assigns* (they become the state of a converted ``if`` or
  loop), and
* which names are *live* after a statement (read later on some path before being assigned
  again), so only those become the outputs of ``cond`` and the variables of ``while_loop``.

Liveness is a backward analysis over the structured statements. Loops iterate to a fixed
point; ``break`` continues with what is live after the loop and ``continue`` with what is
live at the loop's head. Anything it cannot model precisely (``try``, ``with``, ``match``)
is over-approximated, which only ever keeps an extra name alive.
"""

from __future__ import annotations

import ast

__all__ = ["assigned_names", "loaded_names", "live_in", "Liveness"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(node):
    """Yields the nodes of ``node`` without entering nested scopes (their names excepted)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield child  # its name is bound here; its decorators/defaults are read here
                stack.extend(child.decorator_list)
                if not isinstance(child, ast.ClassDef):
                    stack.extend(child.args.defaults)
                    stack.extend(d for d in child.args.kw_defaults if d is not None)
                else:
                    stack.extend(child.bases)
            elif isinstance(child, _SCOPES):
                yield child
            else:
                stack.append(child)


def _target_names(target, out):
    if isinstance(target, ast.Name):
        out.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _target_names(elt, out)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, out)


def assigned_names(nodes):
    """Names bound by the statements ``nodes`` in their own scope (not in nested ones)."""
    out = set()
    for stmt in nodes:
        for n in _walk_scope(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    out.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(n, ast.NamedExpr):
                _target_names(n.target, out)
    return out


def loaded_names(node):
    """Every name read in ``node``, nested scopes included (a closure reads what it uses)."""
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def _stored(node):
    out = set()
    if node is not None:
        _target_names(node, out)
    return out


class Liveness:
    """Backward liveness over one function body; ``after[id(stmt)]`` is live-out of stmt."""

    def __init__(self):
        self.after = {}
        self.head = {}  # id(loop) -> names live at the top of each iteration
        self._loops = []  # (live after the loop, live at its head) for break / continue

    def block(self, stmts, live):
        for stmt in reversed(stmts):
            live = self.stmt(stmt, live)
        return live

    def stmt(self, s, live):
        self.after[id(s)] = frozenset(live)
        if isinstance(s, ast.Assign):
            defs = set()
            for t in s.targets:
                _target_names(t, defs)
            uses = loaded_names(s.value) | set().union(*[loaded_names(t) for t in s.targets])
            return (live - defs) | uses
        if isinstance(s, ast.AugAssign):
            return live | loaded_names(s.value) | loaded_names(s.target) | _stored(s.target)
        if isinstance(s, ast.AnnAssign):
            if s.value is None:
                return live
            return (live - _stored(s.target)) | loaded_names(s.value) | loaded_names(s.target)
        if isinstance(s, ast.Return):
            return loaded_names(s.value)
        if isinstance(s, ast.If):
            return (loaded_names(s.test) | self.block(s.body, set(live))
                    | self.block(s.orelse, set(live)))
        if isinstance(s, (ast.While, ast.For)):
            return self._loop(s, live)
        if isinstance(s, ast.Break):
            return set(self._loops[-1][0]) if self._loops else set(live)
        if isinstance(s, ast.Continue):
            return set(self._loops[-1][1]) if self._loops else set(live)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return (live - {s.name}) | loaded_names(s)
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            return live - assigned_names([s])
        if isinstance(s, (ast.Try, ast.With, ast.AsyncWith)):
            # Over-approximated: every read inside, nothing killed.
            inner = set(live)
            for field in ("body", "orelse", "finalbody"):
                inner = self.block(getattr(s, field, []), inner) | inner
            for handler in getattr(s, "handlers", []):
                inner |= self.block(handler.body, set(live))
            return inner | loaded_names(s)
        return live | loaded_names(s)

    def _loop(self, s, live):
        after = set(live) | self.block(s.orelse, set(live))
        head = set(after)
        is_for = isinstance(s, ast.For)
        for _ in range(20):
            self._loops.append((after, head))
            try:
                body = self.block(s.body, set(head))
            finally:
                self._loops.pop()
            if is_for:
                body = body - _stored(s.target)
            # A lowered `break` in a for loop is tested at the head (extra_test).
            tested = ({s.ag_break_flag} if getattr(s, "ag_break_flag", None) else set()) \
                if is_for else loaded_names(s.test)
            new_head = after | body | tested
            if new_head == head:
                break
            head = new_head
        self.after[id(s)] = frozenset(live)
        self.head[id(s)] = frozenset(head)
        return head | (loaded_names(s.iter) if is_for else set())


def live_in(stmts, live_out=()):
    """Names live before ``stmts`` given those live after."""
    return Liveness().block(stmts, set(live_out))
