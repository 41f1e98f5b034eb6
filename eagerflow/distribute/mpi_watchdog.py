"""The stall watchdog of the MPI communicator: deadlines, stall reports, a fast fail.

One thread per communicator. The main thread *arms* it (a tuple assignment, no lock)
before each blocking MPI call and disarms it after. The thread polls every 50 ms a posted
receive on the side channel (a second duplicate of the communicator, used by nothing
else) and the armed deadline; polling with a sleep keeps it off the CPU, where a blocking
MPI receive would spin a core.

After the warning time it asks every peer what it is doing (answers: waiting in
collective #N, or in user code at file:line, with host and pid) and the lowest waiting
rank prints a stall report, as Horovod's stall inspector does. At the deadline it sends
the final report to every rank; each prints it and says so, then the job ends through
``MPI_Abort`` (an MPI collective cannot be cancelled, so a rank cannot go on after one
timed out). Messages are UTF-8 JSON in fixed-size byte buffers: no pickle on the wire.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import weakref

__all__ = ["Watchdog", "install_excepthook", "user_location", "TIMEOUT_ENV"]

TIMEOUT_ENV = "EAGERFLOW_COLLECTIVE_TIMEOUT"
_SIDE_BYTES = 4096  # one side-channel message (UTF-8 JSON, zero padded)
_TAG_QUERY, _TAG_REPLY, _TAG_FATAL, _TAG_PRINTED = 1, 2, 3, 4
_POLL_SECONDS = 0.05
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_user_frame(filename):
    if filename.startswith("<") or filename.startswith(_PACKAGE_DIR):
        return False
    return "site-packages" not in filename and os.sep + "lib" + os.sep + "python" not in filename


def user_location(frame):
    """``file:line in function`` of the innermost user frame at or above ``frame``."""
    while frame is not None:
        code = frame.f_code
        if _is_user_frame(code.co_filename):
            return "%s:%d in %s" % (code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return "(no user frame)"


def _label(kind, name):
    return "%s %r" % (kind, name) if name else str(kind)


class Watchdog:
    """One thread per communicator: deadlines for the main thread, answers on the side channel.

    Args:
        owner: The MPICommunicator (held weakly); it provides ``_side``, ``_rank``,
            ``_size``, ``_MPI``, ``_identity`` and ``step``.
    """

    def __init__(self, owner):
        self._owner = weakref.proxy(owner)
        self._side = owner._side
        self._rank = owner._rank
        self._size = owner._size
        self._main = threading.main_thread().ident
        self.armed = None  # (seq, kind, name, start, warn_at, deadline, where, peers)
        self.last_done = None  # (seq, kind, name)
        self._buf = bytearray(_SIDE_BYTES)
        self._replies = {}
        self._sends = []
        self._stop = threading.Event()
        self._dying = False
        self._fatal = None
        self._printed = set()
        self._req = self._side.Irecv([self._buf, owner._MPI.BYTE],
                                     source=owner._MPI.ANY_SOURCE, tag=owner._MPI.ANY_TAG)
        self._status = owner._MPI.Status()
        self._thread = threading.Thread(target=self._loop, name="eagerflow-mpi-watchdog",
                                        daemon=True)
        self._thread.start()

    # -- the state each rank reports -------------------------------------------------------
    def state(self):
        armed = self.armed
        info = dict(self._owner._identity)
        if armed is not None:
            seq, kind, name, start, _, _, where, _ = armed
            info.update(waiting=True, seq=seq, kind=kind, name=name, where=user_location(where),
                        waited=round(time.monotonic() - start, 1))
        else:
            frame = sys._current_frames().get(self._main)
            info.update(waiting=False, where=user_location(frame))
            if self.last_done is not None:
                info.update(last_seq=self.last_done[0], last_kind=self.last_done[1],
                            last_name=self.last_done[2])
        return info

    # -- side channel ------------------------------------------------------------------------
    def _send(self, dest, tag, payload):
        data = json.dumps(payload).encode("utf-8")[:_SIDE_BYTES]
        buf = bytearray(_SIDE_BYTES)
        buf[:len(data)] = data
        MPI = self._owner._MPI
        self._sends.append((self._side.Isend([buf, MPI.BYTE], dest=dest, tag=tag), buf))

    def _drain(self):
        """Handles every message that has arrived; returns False once stopped."""
        while self._req.Test(self._status):
            source, tag = self._status.Get_source(), self._status.Get_tag()
            text = bytes(self._buf).rstrip(b"\0").decode("utf-8", "replace")
            try:
                payload = json.loads(text)
            except ValueError:
                payload = {"text": text}
            MPI = self._owner._MPI
            self._req = self._side.Irecv([self._buf, MPI.BYTE], source=MPI.ANY_SOURCE,
                                         tag=MPI.ANY_TAG)
            if tag == _TAG_QUERY:
                self._send(source, _TAG_REPLY, self.state())
            elif tag == _TAG_REPLY:
                self._replies[source] = payload
            elif tag == _TAG_FATAL:
                self._die(payload.get("text", text), int(payload.get("code", 1)),
                          notify=False, sender=source)
            elif tag == _TAG_PRINTED:
                self._printed.add(source)
        self._sends = [(r, b) for r, b in self._sends if not r.Test()]

    def _ask_peers(self, wait_seconds=2.0):
        """Queries every other rank and returns {rank: state or None}."""
        self._replies = {}
        peers = [r for r in range(self._size) if r != self._rank]
        for r in peers:
            self._send(r, _TAG_QUERY, {"from": self._rank})
        end = time.monotonic() + wait_seconds
        while len(self._replies) < len(peers) and time.monotonic() < end:
            self._drain()
            time.sleep(0.01)
        return {r: self._replies.get(r) for r in peers}

    # -- reports -----------------------------------------------------------------------------
    def report(self, armed, peer_states, final):
        seq, kind, name, start, _, deadline, where, peers = armed
        waited = time.monotonic() - start
        what = "%s (%s #%d)" % (_label(kind, name), "call" if peers else "collective", seq)
        me = self._owner._identity
        step = self._owner.step
        missing, waiting = [], ["rank %d (host %s, pid %d) at %s"
                                % (self._rank, me["host"], me["pid"], user_location(where))]
        for r in sorted(peer_states):
            s = peer_states[r]
            if peers is not None and r not in peers:
                continue
            if s is None:
                missing.append("rank %d: no answer on the side channel (busy in native "
                               "code holding the interpreter, or gone)" % r)
                continue
            ident = "rank %d (host %s, pid %d)" % (r, s.get("host"), s.get("pid", -1))
            if s.get("waiting") and s.get("seq") == seq and s.get("kind") == kind:
                waiting.append("%s at %s" % (ident, s.get("where")))
            elif s.get("waiting"):
                missing.append("%s is in a different call: %s #%s at %s (every rank must "
                               "call the same collectives in the same order)"
                               % (ident, _label(s.get("kind"), s.get("name")), s.get("seq"),
                                  s.get("where")))
            else:
                last = ("last finished %s #%s" % (_label(s.get("last_kind"), s.get("last_name")),
                                                  s.get("last_seq"))
                        if "last_seq" in s else "no collective finished yet")
                missing.append("%s is not in a collective (%s); it is now at %s"
                               % (ident, last, s.get("where")))
        lines = [
            "eagerflow MPI %s: %s%s has waited %.1f s; missing ranks:"
            % ("deadline exceeded" if final else "stall warning", what,
               " at training step %d" % step if step is not None else "", waited)]
        lines += ["  " + m for m in missing] or ["  (none answered as missing)"]
        lines.append("Waiting ranks:")
        lines += ["  " + w for w in waiting]
        if final:
            lines.append("Every rank is stopping now (MPI_Abort). Restart the same mpirun "
                         "command to resume from the last checkpoint.")
        else:
            lines.append("The job stops at the %.0f s deadline (set it with "
                         "CommunicationOptions(timeout_seconds=...) or %s)."
                         % (deadline - start, TIMEOUT_ENV))
        return "\n".join(lines)

    def _die(self, text, code, notify=True, sender=None):
        """Prints ``text`` and ends the job; ``notify``: first tell every peer to print it.

        The notifier waits (at most 2 s) until each peer says it has printed, so every
        rank's output carries the message before MPI_Abort takes the job down.
        """
        if self._dying:  # a second fatal notice (several ranks hit the deadline): one message
            return
        self._dying = True
        if notify:
            for r in range(self._size):
                if r != self._rank:
                    self._send(r, _TAG_FATAL, {"text": text, "code": code})
        sys.stderr.write("[eagerflow rank %d] %s\n" % (self._rank, text))
        sys.stderr.flush()
        if notify:
            end = time.monotonic() + 2.0
            while len(self._printed) < self._size - 1 and time.monotonic() < end:
                self._drain()
                time.sleep(0.01)
        else:
            self._send(sender, _TAG_PRINTED, {})
            # The notifier aborts the job once everyone printed; abort ourselves if it cannot.
            end = time.monotonic() + 5.0
            while time.monotonic() < end:
                self._sends = [(r, b) for r, b in self._sends if not r.Test()]
                time.sleep(0.02)
        self._owner._MPI.COMM_WORLD.Abort(code)

    def die_from_main(self, text, code):
        """From another thread: hands the fatal report to the watchdog and waits for the end.

        Only the watchdog thread touches the side channel, so the report goes through it.
        """
        self._fatal = (text, code)
        end = time.monotonic() + 10.0
        while time.monotonic() < end and self._thread.is_alive():
            time.sleep(0.05)
        self._owner._MPI.COMM_WORLD.Abort(code)

    def _loop(self):
        warned = None
        try:
            while not self._stop.is_set():
                self._drain()
                if self._fatal is not None:
                    self._die(*self._fatal)
                armed = self.armed
                if armed is not None:
                    now = time.monotonic()
                    if now >= armed[5]:
                        states = self._ask_peers()
                        self._die(self.report(armed, states, final=True), 1)
                    elif now >= armed[4] and warned != armed[0]:
                        warned = armed[0]
                        states = self._ask_peers()
                        # The lowest waiting rank prints, so N ranks do not print N reports.
                        lower_waiting = any(
                            s and s.get("waiting") and s.get("seq") == armed[0]
                            for r, s in states.items() if r < self._rank)
                        if not lower_waiting and self.armed is armed:
                            sys.stderr.write("[eagerflow rank %d] %s\n"
                                             % (self._rank, self.report(armed, states, False)))
                            sys.stderr.flush()
                # Not held while sleeping: the armed tuple holds the caller's frame, and so
                # the arrays being reduced; a reference kept here for the 50 ms sleep made a
                # gradient bucket look still in use at the next step (a new buffer, page
                # faults and all: 48 times in 168 calls of a 4 MB bucket, on a busy machine).
                armed = None
                self._stop.wait(_POLL_SECONDS)
        except ReferenceError:  # the communicator was collected
            return

    def stop(self):
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        try:
            self._req.Cancel()
            self._req.Wait()
        except Exception:  # noqa: BLE001 - already finalized or completed: nothing to cancel
            pass




_hook_installed = False


def install_excepthook(live):
    """An uncaught exception in one rank ends the job now, with its message on every rank.

    Without this the rank would exit and the others would wait in their next collective
    until the deadline.
    """
    global _hook_installed
    if _hook_installed:
        return
    _hook_installed = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        comms = [c for c in list(live) if c._watchdog is not None and not c._closed]
        if comms and not issubclass(kind, (KeyboardInterrupt, SystemExit)):
            comm = comms[0]
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            where = user_location(tb.tb_frame if tb is not None else None)
            ident = comm._identity
            comm._watchdog.die_from_main(
                "rank %d (host %s, pid %d) stopped with an uncaught %s at %s: %s\nEvery rank "
                "is stopping now (MPI_Abort)." % (comm.rank, ident["host"], ident["pid"],
                                                  kind.__name__, where, value), 1)

    sys.excepthook = hook


