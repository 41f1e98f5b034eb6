"""Graph builtins, declared once: the nodes that are not primitives of the op registry.

A primitive (``eagerflow.ops``) carries its own kernel, rules and flags. A builtin is a node
the graph machinery implements itself: arguments, constants, variable reads and writes,
printing, functional control flow, cross-device transfers, collectives and fused regions.
Each is declared here once, with the flags that the passes, the serializer, the placer,
the replaying interpreter and the executor read, instead of each keeping its own list of
names. Its executor step is registered by the module that implements it
(``executor.BUILTIN_STEPS``); the rest of the machinery finds it by the flags below.

Flags:
    stateful: Has an effect or hidden state: never merged, reordered or removed as dead.
    pure: A pure function of its inputs (may be merged and folded like a primitive).
    free: Costs nothing and lives on no device (an argument or a constant): the placer and
        the partitioner copy it to wherever it is used.
    variable: Reads or writes the graph's variable ``attrs["variable"]`` (an index checked
        against the graph's variables when a file is loaded).
    assigns: For a variable write, the Variable method it performs.
    control_flow: Runs sub-graphs (placed with their callers, not by cost).
    subgraphs: The attrs that name its sub-graphs in the function library.
    replays: :mod:`eagerflow.function.replay` runs it op by op through dispatch.
    debug: Exists for its output on the console (dead-code elimination keeps it only when
        its outputs are used).
    host_sync: Why its step reads values on the host or waits for another party (a
        predicate, the console, a peer), or None: a captured step (``capture.py``) cannot
        hold it, and this text is the reason it gives.

Example:
    >>> from eagerflow.function import builtins
    >>> builtins.BUILTINS["AssignAddVariableOp"].assigns
    'assign_add'
    >>> sorted(builtins.names(free=True))
    ['Const', 'Placeholder']
"""

from __future__ import annotations

__all__ = ["Builtin", "BUILTINS", "names", "PLACEHOLDER", "CONST", "READ_VARIABLE",
           "ASSIGN_VARIABLE", "ASSIGN_ADD_VARIABLE", "ASSIGN_SUB_VARIABLE", "PRINT", "IF",
           "CASE", "WHILE", "CALL", "ASSERT", "SEND", "RECV", "COLLECTIVE_REDUCE",
           "COLLECTIVE_GATHER", "FUSED_ELEMENTWISE", "CUSTOM_GRADIENT", "ASSIGN_OPS"]

_FLAGS = ("stateful", "pure", "free", "variable", "assigns", "control_flow", "subgraphs",
          "replays", "debug", "host_sync")


class Builtin:
    """The declaration of one builtin op (see the module docstring for the flags)."""

    __slots__ = ("name",) + _FLAGS

    def __init__(self, name, stateful=False, pure=False, free=False, variable=False,
                 assigns=None, control_flow=False, subgraphs=(), replays=False, debug=False,
                 host_sync=None):
        self.name = name
        self.stateful = stateful
        self.pure = pure
        self.free = free
        self.variable = variable
        self.assigns = assigns
        self.control_flow = control_flow
        self.subgraphs = subgraphs
        self.replays = replays
        self.debug = debug
        self.host_sync = host_sync

    def __repr__(self):
        flags = ", ".join("%s=%r" % (f, getattr(self, f)) for f in _FLAGS if getattr(self, f))
        return "Builtin(%r%s)" % (self.name, ", " + flags if flags else "")


BUILTINS = {}


def _declare(name, **flags):
    BUILTINS[name] = Builtin(name, **flags)
    return name


def names(**flags):
    """The names of the builtins whose flags have these values (truthy for True).

    Example:
        >>> from eagerflow.function import builtins
        >>> sorted(builtins.names(control_flow=True))
        ['Call', 'Case', 'If', 'While']
    """
    out = []
    for name, b in BUILTINS.items():
        for flag, want in flags.items():
            have = getattr(b, flag)
            if (bool(have) if want is True else have) != want:
                break
        else:
            out.append(name)
    return frozenset(out)


PLACEHOLDER = _declare("Placeholder", free=True, replays=True)
CONST = _declare("Const", free=True, pure=True, replays=True)
READ_VARIABLE = _declare("ReadVariableOp", stateful=True, variable=True, replays=True)
ASSIGN_VARIABLE = _declare("AssignVariableOp", stateful=True, variable=True, assigns="assign",
                           replays=True)
ASSIGN_ADD_VARIABLE = _declare("AssignAddVariableOp", stateful=True, variable=True,
                               assigns="assign_add", replays=True)
ASSIGN_SUB_VARIABLE = _declare("AssignSubVariableOp", stateful=True, variable=True,
                               assigns="assign_sub", replays=True)
PRINT = _declare("Print", stateful=True, replays=True, debug=True,
                 host_sync="it formats its inputs on the host and writes them to the console")
IF = _declare("If", control_flow=True, subgraphs=("then_branch", "else_branch"),
              host_sync="its predicate is read on the host to pick a branch")
CASE = _declare("Case", control_flow=True, subgraphs=("branches",),
                host_sync="its branch index is read on the host")
WHILE = _declare("While", control_flow=True, subgraphs=("cond", "body"),
                 host_sync="its loop condition is read on the host every iteration")
CALL = _declare("Call", control_flow=True,
                host_sync="it runs a sub-graph through another executor call")
ASSERT = _declare("Assert", debug=True, host_sync="its condition is read on the host")
SEND = _declare("Send", stateful=True,
                host_sync="it hands a tensor to another device through the host rendezvous")
RECV = _declare("Recv", stateful=True,
                host_sync="it waits on the host for a tensor from another device")
_PEERS = "it meets the other replicas on the host (a collective)"
COLLECTIVE_REDUCE = _declare("CollectiveReduce", stateful=True, host_sync=_PEERS)
COLLECTIVE_GATHER = _declare("CollectiveGather", stateful=True, host_sync=_PEERS)
FUSED_ELEMENTWISE = _declare("FusedElementwise", pure=True)
# Forwards its first inputs; its sub-graph is a custom gradient (custom_gradient_graph.py).
CUSTOM_GRADIENT = _declare("CustomGradient", pure=True, subgraphs=("grad",), replays=True)

# The variable write performing each Variable method ("assign" -> "AssignVariableOp").
ASSIGN_OPS = {b.assigns: name for name, b in BUILTINS.items() if b.assigns}
