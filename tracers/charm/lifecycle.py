"""Start, clock check, flushing and the two ways a run ends (exit, abort) for the tracer.

`atexit` never runs after `charm.exit()`, so exit is wrapped: every PE closes its writer
(complete=true) and contributes to a reduction whose target calls the real exit. An
uncaught exception reaches `charm.abort` (via handleGeneralError, after charm4py printed the
traceback): every PE closes its writer with complete=false, then the real abort runs; a
timer aborts anyway if a PE cannot answer. Between those, spool records flushed every second
while a PE is quiet (and by a busy one when its buffer is full, or every 2 s) bound what a
killed run loses.
"""

from __future__ import annotations

import os
import socket
import sys
import time

from charm4py import Chare, Reducer

from tracers.charm import clockping
from tracers.charm._state import MSG_PE_SHIFT, ST, clock
from tracers.charm.hooks import write_unfinished
from tracers.charm.rowbuf import say_recorder
from tracers.clock import END_TIMEOUT_S

FLUSH_TICK_S = 1.0
"""A quiet PE flushes its rows this often, so a killed quiet PE (a hang) loses at most ~1 s of events."""
QUIET_ROWS_PER_TICK = 20_000
"""A PE that recorded more rows than this since the last tick is busy: its rows wait for a full
buffer (rowbuf.FLUSH_BYTES) or BUSY_FLUSH_S, so the program is not interrupted by small writes."""
BUSY_FLUSH_S = 2.0
"""A busy PE writes at least this often, so a killed busy PE loses at most ~2 s of events (as before the native recorder)."""
ABORT_GRACE_S = 3.0
"""How long an aborting PE waits for the others to close their files before aborting anyway."""
ORIGIN_HOST = "PARADISE_TRACE_ORIGIN_HOST"
"""Host of the launcher that set PARADISE_TRACE_ORIGIN_NS (tracers.charm.launch)."""


def _charm():
    from charm4py import charm

    return charm


def open_writer() -> None:
    """Called on each PE once charm4py knows the PE number (registerMainModule)."""
    from tracers.charm.parts import PackedWriter

    charm = _charm()
    ST.pe, ST.pes = charm.myPe(), charm.numPes()
    ST.msg_base = ST.pe << MSG_PE_SHIFT
    env_origin = os.environ.get("PARADISE_TRACE_ORIGIN_NS")
    host = socket.gethostname()
    if env_origin:
        ST.origin = int(env_origin)
        ST.origin_unix = int(os.environ.get("PARADISE_TRACE_ORIGIN_UNIX_NS", "0")) or None
        if ST.origin_unix and os.environ.get(ORIGIN_HOST, host) != host:
            # the launcher's CLOCK_MONOTONIC is not this host's: its origin placed here by the wall
            # clocks (the measured offsets correct what those disagree by)
            ST.origin = time.monotonic_ns() - (time.time_ns() - ST.origin_unix)
    else:
        ST.origin, ST.origin_unix = time.monotonic_ns(), time.time_ns()
    clockping.setup(launcher_origin=bool(env_origin))
    ST.writer = PackedWriter(
        ST.trace_dir,
        ST.pe,
        ST.strings,
        ST.rec,
        source="charm4py",
        program=ST.program,
        pes=ST.pes,
        hosts={str(ST.pe): host},
        clock=dict(ST.clock_meta),
        origin_ns=ST.origin_unix,
        names={"coll": "chare class + '#' + creation ordinal", "msg": "(src_pe << 40) | seq"},
        extra={"charm4py": _version(), "argv": sys.argv[1:], "hints": ST.hints_dir, "recorder": ST.recorder_kind},
    )
    ST.rec.pe, ST.rec.origin, ST.rec.msg_base = ST.pe, ST.origin, ST.msg_base
    ST.rec.on_full = ST.writer.flush  # run by the native recorder at a return to the scheduler once full
    if ST.pe == 0:
        say_recorder(ST.recorder_kind)


def _version() -> str:
    try:
        from charm4py import charm4py_version

        return str(charm4py_version)
    except ImportError:  # pragma: no cover
        return "unknown"


def close(complete: bool) -> None:
    """Writes suspended coroutines' rows and closes this PE's spool (idempotent)."""
    w = ST.writer
    if w is None:
        return
    write_unfinished(clock())
    ST.writer = None
    ST.rec.on_full = None
    w.set_metadata(clock=dict(ST.clock_meta))
    try:
        w.close(complete=complete)
    except Exception as exc:  # never mask the program's own outcome
        print(f"paradise: could not close trace file of PE {ST.pe}: {exc}", file=sys.stderr)
    else:
        print(f"paradise: PE {ST.pe}: {w.rows_written} rows spooled, closed in {w.close_s:.3f} s after the "
              f"program's end", file=sys.stderr, flush=True)
    ST.rec.clear()  # rows after the close (the exit's own messages) are not kept


def _tick() -> None:
    w = ST.writer
    if w is None:
        return
    pending = w.pending()
    if pending and (pending <= QUIET_ROWS_PER_TICK or time.monotonic_ns() - w._last_flush > BUSY_FLUSH_S * 1e9):
        w.flush()
    _charm().scheduleCallableAfter(_tick, FLUSH_TICK_S)


class _TracerGroup(Chare):
    """The tracer's own Group: clock ping, name broadcasts, coordinated close. Never recorded."""

    def __init__(self):
        ST.group = self.thisProxy
        _charm().scheduleCallableAfter(_tick, FLUSH_TICK_S)
        self.code, self.waiting, self.finished, self.pings = None, 0, False, clockping.Pings()
        if clockping.decide(_charm()):
            if ST.pe == 0:  # main waits for the start measurements, not forever
                _charm().scheduleCallableAfter(clockping.started, END_TIMEOUT_S, [True])
            self._clock_begin("start")

    def _send(self, fn, *args):
        ST.mute[0] += 1
        try:
            fn(*args)
        finally:
            ST.mute[0] -= 1

    # clock offsets (clockping): PE p > 0 pings PE 0, one round trip at a time
    def _clock_begin(self, when):
        if ST.pe == 0:
            return clockping.record(when, 0, 0)
        self.pings.begin(when)
        self._clock_ping()

    def _clock_ping(self):
        self.pings.t1 = clockping.now()
        self._send(self.thisProxy[0].clock_ping, ST.pe)

    def clock_ping(self, pe):
        t2 = clockping.now()
        self._send(self.thisProxy[pe].clock_pong, t2, clockping.reply_stamp())

    def clock_pong(self, t2, t3):
        if self.pings.answered(t2, t3, clockping.now()):
            return self._clock_ping()
        if self.pings.finish() == "end":
            return self._send(self.thisProxy[0].clock_done)
        self._send(self.thisProxy[0].clock_started)
        if self.pings.end_wanted:
            self._clock_begin("end")

    def clock_started(self):
        clockping.started()

    def clock_end(self):
        """Every PE: the end measurement (after the start one, if that still runs)."""
        if self.pings.when is not None:
            self.pings.end_wanted = True
        else:
            self._clock_begin("end")

    def clock_done(self):
        self.waiting -= 1
        if self.waiting <= 0:
            self._finish_all()

    # the end
    def begin_finish(self, code):
        """On PE 0: the end clock measurement (when the PEs measure offsets), then every PE closes."""
        if self.code is not None:
            return
        self.code = code
        if not ST.clock_measured:
            return self._finish_all()
        self.waiting = _charm().numPes() - 1
        self._send(self.thisProxy.clock_end)
        _charm().scheduleCallableAfter(self._finish_all, END_TIMEOUT_S)  # a PE that cannot answer

    def _finish_all(self):
        if not self.finished:
            self.finished = True
            self._send(self.thisProxy.finish, self.code)

    def learn(self, kind, rid, name, cat):
        (ST.reg.arrays if kind == 0 else ST.reg.groups).setdefault(rid, (name, cat))

    def finish(self, code):
        close(complete=True)
        self._send(self.contribute, code, Reducer.max, self.thisProxy[0].exit_now)

    def exit_now(self, code):
        ST.orig["exit"](code)

    def fail(self):
        close(complete=False)
        self._send(self.contribute, None, None, self.thisProxy[0].abort_now)

    def abort_now(self):
        ST.orig["abort"](ST.abort_reason or "aborted")

    def reason(self, text):
        ST.abort_reason = text


def install_lifecycle(charm, program: str) -> type:
    """Wraps start, registerMainModule, _createInternalChares, exit and abort."""
    tracer_group = _TracerGroup
    charm.register(tracer_group)
    orig = {name: getattr(charm, name) for name in
            ("start", "registerMainModule", "_createInternalChares", "exit", "abort")}
    ST.orig.update(orig)

    def start(entry=None, classes=[], modules=[], interactive=False):  # noqa: B006
        ST.entry_name = getattr(entry, "__name__", None) if not hasattr(entry, "mro") else None
        if hasattr(entry, "mro"):
            ST.main_coll = f"{entry.__name__}#0"
        charm.dynamic_register = sys.modules["__main__"].__dict__
        return orig["start"](clockping.after_start(entry), classes, modules, interactive)

    def registerMainModule():
        orig["registerMainModule"]()
        open_writer()

    def createInternalChares():
        orig["_createInternalChares"]()
        from charm4py import Group

        Group(tracer_group)

    def exit(exit_code=0):
        if ST.exiting or ST.group is None:
            close(complete=True)
            return orig["exit"](exit_code)
        ST.exiting = True
        ST.mute[0] += 1
        ST.group[0].begin_finish(exit_code)
        ST.mute[0] -= 1
        if not charm.threadMgr.isMainThread():
            charm.threadMgr.pauseThread()  # like the real exit: the caller does not continue

    def abort(message):
        if ST.failing or ST.group is None or ST.pes <= 1:
            close(complete=False)
            return orig["abort"](message)
        ST.failing = True
        ST.abort_reason = str(message)
        close(complete=False)
        ST.mute[0] += 1
        ST.group[0].reason(str(message))
        ST.group.fail()
        ST.mute[0] -= 1
        charm.scheduleCallableAfter(orig["abort"], ABORT_GRACE_S, [str(message)])

    charm.start = start
    charm.registerMainModule = registerMainModule
    charm._createInternalChares = createInternalChares
    charm.exit = exit
    charm.abort = abort
    return tracer_group
