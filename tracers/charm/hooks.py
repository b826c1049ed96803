"""Runtime-level hooks on charm4py 1.1: entry-method executions, sends, idle, coroutine switches.

Installed before `charm.start()`: `EntryMethod._run` is patched on the class (every entry
method is bound at registration inside start), and the dispatch/send callables are replaced
on the `charm` instance, which the Cython layer and the proxies look up by attribute on each
call. Per event the work is the clock reads and one call into the recorder (ST.rec: native or
pure Python, tracers/charm/rowbuf.py; strings as codes, nulls as NULL); with the native recorder
the scheduler callbacks are wrapped by compiled code (no Python frame). Hot paths bind everything
they touch as closure locals, call the wrapped function positionally, and cache per entry method /
array what does not change per message.
"""

from __future__ import annotations

import greenlet

from paradise.format import INDEX_BITS, pack_index
from tracers.charm import emrun, identity
from tracers.charm._state import MSG_PE_SHIFT, ST, clock
from tracers.charm.identity import (
    CAT,
    COLL,
    EXPLICIT,
    INDEX,
    NO_OBJECT,
    OBJ,
    STEP,
    SYNCS,
    set_step,
)
from tracers.charm.rowbuf import CREATE_KEY, MSG_KEY, NULL, PyRecorder

MASK2 = (1 << INDEX_BITS) - 1  # 2-D indices packed inline, as pack_index does

# Kind codes: the string table is seeded with the kind names, so the code is the index.
KINDS = ("exec", "send", "idle", "create", "migrate", "step", "piece")
K_EXEC, K_SEND, K_IDLE, K_CREATE, K_MIGRATE, K_STEP, K_PIECE = range(len(KINDS))
BCAST_TEXT = '{"bcast":true}'
COMBINED_TEXT = '{"combined":true}'
"""args of the send row of a message that a combiner below the tracer buffered into a batch
(the send callable returned True); the batch itself is one more send row, to the combiner."""
UNFINISHED = '{"unfinished":true}'

# Entry-method flags (precomputed per EntryMethod at registration).
F_PLAIN, F_INIT, F_MIGRATED, F_SYNC, F_SKIP = range(5)


def seed_strings() -> None:
    for k in KINDS:
        ST.strings.code(k)
    # the pre-packed row tails (identity.record) carry these codes as constants
    assert ST.strings.code("exec") == K_EXEC == identity.K_EXEC and ST.strings.code("send") == K_SEND == identity.K_SEND


def _em_info(em, entry_name: str | None) -> tuple[int, int, bool]:
    """(code of the trace name, flag, is coroutine) of an EntryMethod."""
    cls_name = em.C.__name__
    name = em.name
    if cls_name == "DefaultMainchare" and name == "__init__" and entry_name:
        name = entry_name
    if cls_name == "_TracerGroup":
        flag = F_SKIP
    elif em.name == "__init__":
        flag = F_INIT
    elif em.name == "migrated":
        flag = F_MIGRATED
    elif em.name == "resumeFromSync":
        flag = F_SYNC
    else:
        flag = F_PLAIN
    return ST.strings.code(name), flag, hasattr(getattr(em.C, em.name, None), "_ck_coro")


def install_exec_hooks(entry_method_mod) -> None:
    """Patches EntryMethod so every execution is timed and recorded."""
    EM = entry_method_mod.EntryMethod
    orig_init, orig_run = EM.__init__, EM._run
    ST.orig["em_init"], ST.orig["em_run"] = orig_init, orig_run
    rexec, cur, reg, opened = ST.rec.exec, ST.cur, ST.reg, ST.open
    ids_get = reg.ids.get
    seed_strings()

    def em_init(self, C, name, profile=False):
        orig_init(self, C, name, profile)
        self._pt = _em_info(self, ST.entry_name)

    def run(self, obj, header, args, ret_fut=False):
        name, flag, coro = self._pt
        if flag == F_SKIP:
            return orig_run(self, obj, header, args, ret_fut)
        e = ids_get(id(obj))
        if e is not None and e[0]() is obj:
            ident = e[1]
        else:
            ident = reg.identify(obj, header)
            reg.remember(obj, ident)
        mid = header.get(MSG_KEY, NULL) if header else NULL
        t0 = clock()
        parent = cur[0]
        if parent is not None:  # nested: the parent's piece so far ends here
            pause(parent, t0)
        cur[0] = rec = [t0, 0, parent, ident, t0, name, mid]
        if flag:
            _special(flag, obj, ident, mid, t0)
        if coro:  # may suspend: it has PIECE_END from the start (`pause`)
            rec.append(None)
        try:
            orig_run(self, obj, header, args, ret_fut)
        finally:
            t1 = clock()
            cur[0] = parent
            if parent is not None:
                parent[0] = t1  # the parent's next piece starts
            r0 = rec[0]
            if r0 is not t0:  # it was paused (rec[0] is its last resume): its last piece ends here
                if coro:
                    opened.pop(id(rec), None)
                write_piece(rec, t1)
            rexec(t0, t1, rec[1] + t1 - r0, mid, name, ident)  # the step may have changed meanwhile

    EM.__init__ = em_init
    EM._run = ST.exec_hook = _native_hook("exec", orig_run, run, run_globals=emrun.replaces(orig_run))


def _special(flag: int, obj, ident: list, mid: int, t: int) -> None:
    """create / migrate / resumeFromSync rows, at the start of those executions."""
    o, pe, code = ST.origin, ST.pe, ST.strings.code
    row = None
    if flag == F_INIT:
        row = (K_CREATE, code(type(obj).__name__), mid, NULL if mid == NULL else mid >> MSG_PE_SHIFT)
    elif flag == F_MIGRATED:
        src = getattr(obj, "_pt_from", None)
        if src is not None:
            del obj._pt_from
        row = (K_MIGRATE, code("migrate"), NULL, NULL if src is None else src)
    elif flag == F_SYNC:
        ident[SYNCS] += 1
        if not ident[EXPLICIT]:
            set_step(ident, ident[SYNCS])
        row = (K_STEP, code("resumeFromSync"), NULL, NULL)
    if row is not None:
        kind, name, msg, peer_pe = row
        ST.rec.row(kind, pe, t - o, NULL, NULL, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX], name, msg, peer_pe,
                   NULL, NULL, NULL, ident[STEP], NULL)


def _step_row(ident: list, name: str, step: int) -> None:
    ST.rec.row(K_STEP, ST.pe, clock() - ST.origin, NULL, NULL, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX],
               ST.strings.code(name), NULL, NULL, NULL, NULL, NULL, step, NULL)


def record_step(n: int) -> None:
    """tracers.charm.step(n): a `step` row; later execs of this object carry step=n."""
    rec = ST.cur[0]
    ident = NO_OBJECT if rec is None else rec[3]
    if rec is not None:
        set_step(ident, int(n))
        ident[EXPLICIT] = True
    _step_row(ident, "step", int(n))


def install_step_api() -> None:
    """tracers.charm.step records: with the native recorder the compiled hook (no Python frame per
    call) becomes `tracers.charm.step` itself, for programs that import it after the hooks are in."""
    import tracers.charm as api

    if isinstance(ST.rec, PyRecorder):
        api._step_hook = record_step
        return
    from tracers.charm._recorder import Hook

    hook = Hook("step", record_step, record_step, ST.rec, ST.cur, ST.pend, ST.mute, ST, {}, {}, NO_OBJECT, 0, 0,
                INDEX_BITS, step_name=ST.strings.code("step"))
    api._step_hook = api.step = hook


def install_atsync(chare_mod) -> None:
    """Chare.AtSync marks an LB step boundary (`step` row named AtSync)."""
    Chare = chare_mod.Chare
    orig = Chare.AtSync
    ST.orig["AtSync"] = orig

    def AtSync(self):
        ident = ST.reg.ident_of(self) or NO_OBJECT
        _step_row(ident, "AtSync", ident[STEP])
        return orig(self)

    Chare.AtSync = AtSync


def install_send_hooks(charm) -> None:
    """packMsg tags each message with an id in its header; the send calls write `send` rows.

    A message combiner installed below (hints.runtime.charm_combine) returns True from the send
    callable when it buffered the message; its row then says so in args. The pending message is
    read before the call: a batch the combiner sends meanwhile is recorded by the nested hooks."""
    rsend, cur, pend, mute, seq, P, reg = ST.rec.send, ST.cur, ST.pend, ST.mute, ST.seq, ST, ST.reg
    orig_pack = charm.packMsg
    ST.orig["packMsg"] = orig_pack
    em_table = charm.entryMethods
    bcast = ST.strings.code(BCAST_TEXT)
    combined = ST.strings.code(COMBINED_TEXT)

    def packMsg(destObj, msgArgs, header):
        if mute[0]:
            return orig_pack(destObj, msgArgs, header)
        t = clock()
        seq[0] = n = seq[0] + 1
        header[MSG_KEY] = mid = P.msg_base + n
        if P.pending_create is not None:
            header[CREATE_KEY] = P.pending_create
        msg = orig_pack(destObj, msgArgs, header)
        if destObj is None:
            m0 = msg[0]
            size = len(m0)
            dc = header.get(b"dcopy")
            if dc:
                for d in dc:
                    size += d[3]
            pend[0] = (m0, mid, size, t)
        else:  # local-message optimisation: nothing is serialised
            pend[0] = (msg[0], mid, NULL, t)
        return msg

    ep_codes: dict[int, int] = {}

    def ep_name(ep) -> int:
        code = ep_codes.get(ep)
        if code is None:
            em = em_table.get(ep)
            if em is None:
                return NULL
            code = ep_codes[ep] = em._pt[0]
        return code

    def row(p, name: int, peer_pe: int, peer_coll: int, peer_obj: int, args: int) -> None:
        rec = cur[0]
        rsend(p[3], p[1], name, peer_pe, peer_coll, peer_obj, p[2], args, NO_OBJECT if rec is None else rec[3])

    orig_array, orig_group, orig_chare = charm.CkArraySend, charm.CkGroupSend, charm.CkChareSend
    ST.orig.update(CkArraySend=orig_array, CkGroupSend=orig_group, CkChareSend=orig_chare)
    acodes: dict[int, int] = {}

    def CkArraySend(aid, index, ep, msg):  # the hot one: row built inline
        p = pend[0]
        batched = orig_array(aid, index, ep, msg)
        if p is None or p[0] is not msg[0]:
            return  # AtSync's raw message, or a tracer message
        pend[0] = None
        coll = acodes.get(aid)
        if coll is None:
            coll = reg.coll_code(reg.arrays, aid)
            if coll != NULL:
                acodes[aid] = coll
        name = ep_codes.get(ep)
        if name is None:
            name = ep_name(ep)
        if index:
            n = len(index)
            peer = index[0] if n == 1 else ((index[0] << INDEX_BITS) | (index[1] & MASK2)) if n == 2 else pack_index(index)
            args = combined if batched else NULL
        else:
            peer, args = NULL, bcast
        rec = cur[0]
        rsend(p[3], p[1], name, NULL, coll, peer, p[2], args, NO_OBJECT if rec is None else rec[3])

    def CkGroupSend(gid, index, ep, msg):
        p = pend[0]
        batched = orig_group(gid, index, ep, msg)
        if p is None or p[0] is not msg[0]:
            return
        pend[0] = None
        coll = reg.coll_code(reg.groups, gid)
        if index >= 0:
            row(p, ep_name(ep), index, coll, index, combined if batched else NULL)
        else:
            row(p, ep_name(ep), NULL, coll, NULL, bcast)

    def CkChareSend(cid, ep, msg):
        p = pend[0]
        orig_chare(cid, ep, msg)
        if p is None or p[0] is not msg[0]:
            return
        pend[0] = None
        row(p, ep_name(ep), cid[0], ST.strings.code(P.main_coll), 0, NULL)

    charm.packMsg = _native_hook("pack", orig_pack, packMsg)
    charm.CkArraySend = _native_hook("array_send", orig_array, CkArraySend, acodes, ep_codes, bcast, combined)
    charm.CkGroupSend, charm.CkChareSend = CkGroupSend, CkChareSend
    ST.send_row = row


def _native_hook(kind: str, orig, slow, acodes: dict | None = None, ep_codes: dict | None = None, bcast: int = 0,
                 combined: int = 0, run_globals: dict | None = None):
    """The compiled fast path of a hook (_recorder.Hook) with the native recorder, which hands the
    cases it does not handle to the Python hook `slow`; `slow` itself with the pure-Python recorder.
    `run_globals` (exec): the hook does the work of charm4py 1.1's `_run` itself (tracers.charm.emrun)."""
    if isinstance(ST.rec, PyRecorder):
        return slow
    from tracers.charm._recorder import Hook

    return Hook(kind, orig, slow, ST.rec, ST.cur, ST.pend, ST.mute, ST, {} if acodes is None else acodes,
                {} if ep_codes is None else ep_codes, NO_OBJECT, bcast, combined, INDEX_BITS, run_globals,
                emrun.em_failed, emrun.em_block, ST.reg.ids)


def install_multicast_hook(charm) -> None:
    """Section multicasts go through lib.CkGroupSendMulti: wrap the lib in a thin proxy."""
    lib = charm.lib
    pend = ST.pend

    class _LibProxy:
        def __getattr__(self, name):
            value = getattr(lib, name)
            if callable(value):
                self.__dict__[name] = value  # later lookups skip __getattr__
            return value

        def CkGroupSendMulti(self, gid, pes, ep, msg):
            lib.CkGroupSendMulti(gid, pes, ep, msg)
            p = pend[0]
            if p is None or p[0] is not msg[0]:
                return
            pend[0] = None
            em = charm.entryMethods.get(ep)
            code = ST.strings.code
            ST.send_row(p, em._pt[0] if em is not None else NULL, NULL, ST.reg.coll_code(ST.reg.groups, gid),
                        NULL, code(f'{{"multicast":{len(pes)}}}'))

    charm.lib = _LibProxy()


def install_migration_hook(charm) -> None:
    """arrayElemLeave runs on the source PE before the element is pickled: note where it was."""
    orig = charm.arrayElemLeave
    ST.orig["arrayElemLeave"] = orig
    forget = getattr(ST.exec_hook, "forget", None)

    def arrayElemLeave(aid, index):
        obj = charm.arrays[aid].get(index)
        if obj is not None:
            obj._pt_from = ST.pe
            ST.reg.carry(obj)
            if forget is not None:  # the compiled exec hook's cache of the chare's identity
                forget(obj)
        return orig(aid, index)

    charm.arrayElemLeave = arrayElemLeave


PIECE_END = 7
"""Field of the record of an execution that runs in pieces: when its last paused piece ended
(None until it is first paused). An execution record is [start of its current piece (its start
or last resume), active so far, parent record, identity, t0, name code, msg]; in a record of the
compiled exec hook that was never paused, the start (fields 0 and 4) is None and the recorder holds
it (exec_t0: no int object per execution), put into the record by `pause`; a coroutine /
threaded entry method has PIECE_END from its start, any other execution gets it when it is first
paused (`pause`: a nested execution starts, or a coroutine is resumed inside it). Plain
executions that nothing runs inside never have it: they pay nothing."""


def write_piece(rec: list, t1: int) -> None:
    """A `piece` row: the execution of `rec` ran from its current piece's start to t1 (format 1.1)."""
    o, ident, mid = ST.origin, rec[3], rec[6]
    ST.rec.row(K_PIECE, ST.pe, rec[0] - o, t1 - o, NULL, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX],
               rec[5], mid, NULL, NULL, NULL, NULL, ident[STEP], NULL, rec[4] - o)


def pause(rec: list, now: int) -> None:
    """The execution of `rec` stops running at `now` (an execution nested in it starts, or its
    greenlet switches away): the piece it ran counts in `active` and is written, so the running
    intervals of a PE never overlap. The caller sets rec[0] when it resumes, so at its end
    `rec[0] is not t0` tells `run` that it ran in pieces. A coroutine paused for the first time
    becomes open (its rows are written at the close if it never ends)."""
    if rec[0] is None:  # a record of the compiled exec hook, never paused: its start is in the recorder
        rec[0] = rec[4] = ST.rec.exec_t0
    rec[1] += now - rec[0]
    write_piece(rec, now)
    if len(rec) > PIECE_END:
        if rec[PIECE_END] is None:
            ST.open[id(rec)] = rec
        rec[PIECE_END] = now
    else:
        rec.append(now)


def install_greenlet_trace() -> None:
    """Greenlet switches: the execution running in the greenlet switched away from is paused (writes
    the piece it just ran: a coroutine suspending, or the execution a coroutine is resumed inside);
    the one of the greenlet switched to starts its next piece."""
    cur = ST.cur

    def trace(event, args):
        if event != "switch" and event != "throw":
            return
        origin, target = args
        now = clock()
        rec = cur[0]
        if rec is not None:
            pause(rec, now)
        try:
            origin._pt_cur = rec
        except AttributeError:
            pass
        nxt = getattr(target, "_pt_cur", None)
        if nxt is not None:
            nxt[0] = now
        cur[0] = nxt

    greenlet.settrace(trace)


def write_unfinished(now: int) -> None:
    """Rows for coroutine executions still open when the trace closes (e.g. `main`): the exec row
    and, for one that is running now (the trace closes from inside it), its last piece. One that
    is suspended ends with its last piece; its pieces were written when it was paused."""
    o, unfinished = ST.origin, ST.strings.code(UNFINISHED)
    running = ST.cur[0]
    if running is not None and len(running) > PIECE_END and running[PIECE_END] is None:
        ST.open[id(running)] = running  # a coroutine never paused (a paused one is open already)
    for rec in list(ST.open.values()):
        ident, mid = rec[3], rec[6]
        active, t1 = rec[1], now
        if rec is running:
            active += now - rec[0]
            if rec[PIECE_END] is not None:
                write_piece(rec, now)
        elif rec[PIECE_END] is not None:
            t1 = rec[PIECE_END]
        ST.rec.row(K_EXEC, ST.pe, rec[4] - o, t1 - o, active, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX],
                   rec[5], mid, NULL if mid == NULL else mid >> MSG_PE_SHIFT, NULL, NULL, NULL, ident[STEP],
                   unfinished)
    ST.open.clear()
