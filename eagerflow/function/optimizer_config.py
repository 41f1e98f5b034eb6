"""``eagerflow.config.optimizer``: which graph optimizations traced functions get.

The option names are TensorFlow's (``tf.config.optimizer.set_experimental_options``) where
eagerflow has the same optimization:

=============================  ===========================================================
``constant_folding``           evaluate constant subexpressions once (default on)
``arithmetic_optimization``    algebraic simplification: ``x*1``, ``neg(neg(x))``,
                               transpose/reshape chains... (default on)
``dependency_optimization``    remove Identity/StopGradient nodes (default on)
``common_subgraph_elimination`` merge duplicate computations (default on)
``remapping``                  elementwise fusion (default on)
``elementwise_fusion``         eagerflow's own switch for the same fusion (default on)
``debug_stripper``             remove Print/Assert nodes (default off, as in TF)
``disable_model_pruning``      keep dead nodes (default False: dead code is removed)
``disable_meta_optimizer``     turn every optimization off (default False)
``min_graph_nodes``            skip graphs with fewer computing nodes (default 0)
=============================  ===========================================================

TF's other option names (``layout_optimizer``, ``shape_optimization``, ``loop_optimization``,
``function_optimization``, ``scoped_allocator_optimization``, ``pin_to_host_optimization``,
``implementation_selector``, ``auto_mixed_precision``, ``auto_parallel``,
``use_plugin_optimizers``) are accepted and have no effect. Options apply to graphs
compiled after they are set: a function already called keeps its compiled graph.

Example:
    >>> import eagerflow as ef
    >>> ef.config.optimizer.set_experimental_options({"constant_folding": False})
    >>> ef.config.optimizer.get_experimental_options()["constant_folding"]
    False
    >>> ef.config.optimizer.set_experimental_options({"constant_folding": True})
"""

from __future__ import annotations

__all__ = ["set_experimental_options", "get_experimental_options", "set_jit", "get_jit",
           "effective_options"]

DEFAULTS = {
    "constant_folding": True,
    "arithmetic_optimization": True,
    "dependency_optimization": True,
    "common_subgraph_elimination": True,
    "remapping": True,
    "elementwise_fusion": True,
    "debug_stripper": False,
    "disable_model_pruning": False,
    "disable_meta_optimizer": False,
    "min_graph_nodes": 0,
}
# Accepted for TF compatibility; no eagerflow pass corresponds to them.
NO_EFFECT = frozenset((
    "layout_optimizer", "shape_optimization", "loop_optimization", "function_optimization",
    "scoped_allocator_optimization", "pin_to_host_optimization", "implementation_selector",
    "auto_mixed_precision", "auto_parallel", "use_plugin_optimizers",
))
_ALWAYS_REPORTED = ("disable_model_pruning", "disable_meta_optimizer")

_options = {}
_jit = False


def set_experimental_options(options):
    """Sets graph optimizer options; keys not given keep their current values.

    Args:
        options: A dict from option name (see the module docstring) to a bool
            (``min_graph_nodes``: an int).

    Raises:
        ValueError: For an unknown option name or a value of the wrong type.

    Example:
        >>> import eagerflow as ef
        >>> ef.config.optimizer.set_experimental_options({"remapping": False})
        >>> ef.config.optimizer.get_experimental_options()["remapping"]
        False
        >>> ef.config.optimizer.set_experimental_options({"remapping": True})
    """
    checked = {}
    for key, value in dict(options).items():
        if key not in DEFAULTS and key not in NO_EFFECT:
            raise ValueError(
                "Unknown graph optimizer option %r. Valid options: %s." % (
                    key, ", ".join(sorted(set(DEFAULTS) | NO_EFFECT))))
        if key == "min_graph_nodes":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError("min_graph_nodes must be an int, got %r" % (value,))
        elif not isinstance(value, bool):
            raise ValueError("Optimizer option %r must be a bool, got %r" % (key, value))
        checked[key] = value
    _options.update(checked)


def get_experimental_options():
    """The options set so far, plus the two always-reported switches (as TF).

    Returns:
        A dict from option name to its configured value.

    Example:
        >>> import eagerflow as ef
        >>> ef.config.optimizer.get_experimental_options()["disable_meta_optimizer"]
        False
    """
    out = {key: DEFAULTS[key] for key in _ALWAYS_REPORTED}
    out.update(_options)
    return out


def effective_options(overrides=None):
    """Every option's value in effect: defaults, then set options, then ``overrides``."""
    out = dict(DEFAULTS)
    out.update((k, v) for k, v in _options.items() if k in DEFAULTS)
    if overrides:
        for key, value in overrides.items():
            if key not in DEFAULTS and key not in NO_EFFECT:
                raise ValueError("Unknown graph optimizer option %r." % (key,))
            out[key] = value
    return out


def reset():
    """Forgets every option set (tests)."""
    _options.clear()


def set_jit(enabled):
    """Accepted for compatibility: there is no XLA here, so graphs are never JIT-compiled.

    Args:
        enabled: ``True``/``"autoclustering"`` or ``False``; only recorded.

    Example:
        >>> import eagerflow as ef
        >>> ef.config.optimizer.set_jit(False)
        >>> ef.config.optimizer.get_jit()
        ''
    """
    global _jit
    _jit = enabled in (True, "autoclustering")


def get_jit():
    """``"autoclustering"`` if ``set_jit`` enabled it, else ``""`` (TF's return values)."""
    return "autoclustering" if _jit else ""
