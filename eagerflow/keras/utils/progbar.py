"""``Progbar``: the progress line of ``fit``/``evaluate``/``predict``.

On a terminal (``sys.stdout.isatty()``) the bar is redrawn in place with a carriage return:
step count, bar, ETA (or elapsed time at the end), time per step and metrics. When output goes
to a file or a pipe, nothing is written until the end, then a single line
(``8/8 - 1s - 12ms/step - loss: 0.3000``): logs stay readable instead of filling up with
carriage returns. ``sys.stdout`` is looked up at each write, so redirection made after the
bar was created (pytest's ``capsys``, ``contextlib.redirect_stdout``) is honoured.

Example:
    >>> from eagerflow.keras.utils import Progbar
    >>> bar = Progbar(target=2, verbose=2)
    >>> bar.update(1, [("loss", 1.0)])
    >>> bar.update(2, [("loss", 3.0)])  # the last update shows its values as given
    ... # doctest: +ELLIPSIS
    2/2 - 0s - ...s/step - loss: 3.0000
"""

from __future__ import annotations

import math
import sys
import time

__all__ = ["Progbar", "format_value", "format_step_time"]


def format_value(value):
    """A metric value as Keras prints it: 4 decimals, or scientific notation when tiny."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return " %s" % (value,)
    if abs(value) > 1e-3:
        return " %.4f" % value
    return " %.4e" % value


def format_step_time(seconds, unit_name="step"):
    """``" 12ms/step"``, ``" 3s/step"`` or ``" 250us/step"``."""
    if seconds >= 1 or seconds == 0:
        return " %.0fs/%s" % (seconds, unit_name)
    if seconds >= 1e-3:
        return " %.0fms/%s" % (seconds * 1e3, unit_name)
    return " %.0fus/%s" % (seconds * 1e6, unit_name)


def _format_eta(eta):
    if eta > 3600:
        return "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
    if eta > 60:
        return "%d:%02d" % (eta // 60, eta % 60)
    return "%ds" % eta


def _can_encode(stream, text):
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return True
    except (UnicodeEncodeError, LookupError):
        return False


class Progbar:
    """Displays a progress bar.

    Args:
        target: Total number of steps expected, None if unknown.
        width: Width of the bar in characters.
        verbose: 0 (silent), 1 (live bar on a terminal; one line at the end otherwise) or
            2 (one line at the end).
        interval: Minimum time in seconds between two redraws of the live bar.
        stateful_metrics: Names of metrics shown as given; the others are averaged over the
            steps seen (weighted by the number of steps each update covers).
        unit_name: What a step is called (``"step"`` or ``"sample"``).

    Example:
        >>> from eagerflow.keras.utils import Progbar
        >>> bar = Progbar(target=None, verbose=0)
        >>> bar.add(3, [("acc", 0.5)])
        >>> bar._seen_so_far
        3
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step"):
        self.target = target
        self.width = int(width)
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        if stateful_metrics is None:
            stateful_metrics = set()
        elif isinstance(stateful_metrics, (list, tuple, set, frozenset)):
            stateful_metrics = set(stateful_metrics)
        self.stateful_metrics = stateful_metrics  # anything supporting `in`
        self._seen_so_far = 0
        self._values = {}  # name -> [weighted sum, weight]
        self._values_order = []
        self._start = time.time()
        self._last_update = 0.0
        self._time_after_first_step = None
        self._prev_width = 0
        self._finalized = False

    @property
    def _stream(self):
        return sys.stdout

    def _dynamic(self):
        isatty = getattr(self._stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # a closed stream
            return False

    def update(self, current, values=None, finalize=None):
        """Moves the bar to step ``current`` and records ``values``.

        Args:
            current: Index of the current step (1-based count of steps done).
            values: List of ``(name, value)`` pairs for this step.
            finalize: Whether this is the last update; defaults to ``current >= target``.
        """
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for name, value in values or ():
            if name not in self._values_order:
                self._values_order.append(name)
            if name in self.stateful_metrics or finalize:
                self._values[name] = [value, 1]
            else:
                weight = max(current - self._seen_so_far, 1)
                entry = self._values.get(name)
                if entry is None:
                    self._values[name] = [value * weight, weight]
                else:
                    entry[0] += value * weight
                    entry[1] += weight
        self._seen_so_far = current
        now = time.time()
        per_step = self._step_duration(current, now)
        if self.verbose == 1 and self._dynamic():
            if now - self._last_update < self.interval and not finalize:
                return
            self._draw_live(current, now, per_step, finalize)
        elif self.verbose in (1, 2) and finalize and not self._finalized:
            self._finalized = True
            self._write(self._summary_line(current, now, per_step) + "\n")
        self._last_update = now

    def add(self, n, values=None):
        """Advances the bar by ``n`` steps."""
        self.update(self._seen_so_far + n, values)

    # -- drawing ------------------------------------------------------------------------------
    def _metrics_text(self):
        text = ""
        for name in self._values_order:
            total, weight = self._values[name]
            try:
                avg = float(total) / max(1, weight)
            except (TypeError, ValueError):
                text += " - %s: %s" % (name, total)
                continue
            text += " - %s:%s" % (name, format_value(avg))
        return text

    def _count(self, current):
        if self.target is not None and self.target > 0:
            digits = int(math.log10(self.target)) + 1
            return "%*d/%d" % (digits, current, self.target)
        return "%d/Unknown" % current

    def _summary_line(self, current, now, per_step):
        return "%s - %.0fs -%s%s" % (self._count(current), now - self._start,
                                     format_step_time(per_step, self.unit_name),
                                     self._metrics_text())

    def _draw_live(self, current, now, per_step, finalize):
        stream = self._stream
        fancy = _can_encode(stream, "\u2501")
        count = self._count(current)
        if self.target is not None and self.target > 0:
            done = int(self.width * min(current, self.target) / self.target)
            if fancy:
                bar = "\x1b[32m%s\x1b[0m\x1b[37m%s\x1b[0m" % ("\u2501" * done,
                                                           "\u2501" * (self.width - done))
            else:
                bar = "[%s%s]" % ("=" * done, "." * (self.width - done))
            visible_bar = self.width if fancy else self.width + 2
            head = "%s %s" % (count, bar)
            visible = len(count) + 1 + visible_bar
        else:
            head = count
            visible = len(count)
        if finalize or self.target is None:
            info = " %.0fs" % (now - self._start)
        else:
            info = " %s" % _format_eta(per_step * (self.target - current))
        info += format_step_time(per_step, self.unit_name) + self._metrics_text()
        visible += len(info)
        line = "\r" + head + info
        if self._prev_width > visible:
            line += " " * (self._prev_width - visible)
        if finalize:
            line += "\n"
            self._finalized = True
        self._prev_width = visible
        self._write(line)

    def _write(self, text):
        stream = self._stream
        stream.write(text)
        flush = getattr(stream, "flush", None)
        if flush is not None:
            flush()

    def _step_duration(self, current, now):
        """Seconds per step; the first step (often slow: tracing) is left out once others
        have been seen."""
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            per_step = (now - self._time_after_first_step) / (current - 1)
        else:
            per_step = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_step
