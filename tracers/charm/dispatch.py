"""Idle time of a charm4py PE: the five scheduler callbacks, wrapped.

Control enters Python from the Charm++ scheduler through recvArrayMsg, recvGroupMsg,
recvChareMsg, recvArrayBcast and buildMainchare, and goes back when they return; the gap
between a return and the next entry is the PE's idle time (`idle` rows). When the last thing a
callback recorded is an execution's end, that time is the return's (one clock read for both: what
charm4py does after the entry method returns is well under a microsecond). The native recorder
wraps them in compiled code (_recorder.Dispatch, the same rule); the pure-Python recorder in
the closures below.
"""

from __future__ import annotations

from tracers.charm._state import ST, clock
from tracers.charm.rowbuf import FLUSH_BYTES, PyRecorder

IDLE_MIN_NS = 10_000
"""Gaps between scheduler dispatches shorter than 10 us are charm4py's own dispatch cost
(one Cython callback, unpickling), not waiting; only longer gaps become `idle` rows (the same
threshold is IDLE_MIN_NS in _recorder.c)."""


def install_dispatch_hooks(charm) -> None:
    """Idle = time between returning to the Charm++ scheduler and its next Python callback.

    The return to the scheduler is also where a full recorder is flushed (once per message, not
    once per row). The native recorder wraps the callbacks in compiled code (_recorder.Dispatch);
    the pure-Python one in the closures below."""
    names = (("recvArrayMsg", 5), ("recvGroupMsg", 4), ("recvChareMsg", 4), ("recvArrayBcast", 5),
             ("buildMainchare", 4))
    if isinstance(ST.rec, PyRecorder):
        wrap = _py_dispatch_wrappers()
    else:
        from tracers.charm._recorder import Dispatch

        rec = ST.rec

        def wrap(fn, _arity):
            return Dispatch(fn, rec)

    for name, arity in names:
        orig = getattr(charm, name)
        ST.orig[name] = orig
        setattr(charm, name, wrap(orig, arity))


def _py_dispatch_wrappers():
    """wrap(fn, arity) of the pure-Python recorder; its depth and last return live in `state`."""
    rec, P = ST.rec, ST
    buf = rec.buf
    state = [0, 0]  # depth of nested dispatches, time of the last return to the scheduler
    ST.dispatch_state = state
    ridle = rec.idle

    def back():
        if len(buf) > FLUSH_BYTES and P.writer is not None:
            P.writer.flush()

    # No try/finally: an exception here ends the run (handleGeneralError -> abort).
    # wrap5 and wrap4 are copies on purpose: fixed arity avoids packing *args on every message.
    def wrap5(fn):
        def dispatch(a, b, c, d, e):
            depth = state[0]
            if depth == 0:
                t = clock()
                if state[1] and t - state[1] > IDLE_MIN_NS:
                    ridle(state[1], t)
                rec.end_len = -1
            state[0] = depth + 1
            fn(a, b, c, d, e)
            state[0] = depth
            if depth == 0:
                state[1] = rec.end_t if rec.end_len == len(buf) else clock()
                if len(buf) > FLUSH_BYTES:
                    back()

        return dispatch

    def wrap4(fn):
        def dispatch(a, b, c, d):
            depth = state[0]
            if depth == 0:
                t = clock()
                if state[1] and t - state[1] > IDLE_MIN_NS:
                    ridle(state[1], t)
                rec.end_len = -1
            state[0] = depth + 1
            fn(a, b, c, d)
            state[0] = depth
            if depth == 0:
                state[1] = rec.end_t if rec.end_len == len(buf) else clock()
                if len(buf) > FLUSH_BYTES:
                    back()

        return dispatch

    return lambda fn, arity: wrap5(fn) if arity == 5 else wrap4(fn)


