"""Runtime-level hooks on charm4py 1.1: entry-method executions, sends, idle, coroutine switches.

Installed before `charm.start()`: `EntryMethod._run` is patched on the class (every entry
method is bound at registration inside start), and the dispatch/send callables are replaced
on the `charm` instance, which the Cython layer and the proxies look up by attribute on each
call. Per event the work is one clock read and one tuple append (see docs/tracing-charm.md).

Row tuples follow paradise.format.COLUMN_NAMES: kind, pe, t0, t1, active, tid, cat, coll,
obj, index, name, msg, peer_pe, peer_coll, peer_obj, bytes, step, stream, prio, group,
group_size, dtype, args.
"""

from __future__ import annotations

import greenlet

from paradise.format import pack_index
from tracers.charm._state import MSG_PE_SHIFT, ST, clock
from tracers.charm.identity import CAT, COLL, EXPLICIT, INDEX, NO_OBJECT, OBJ, STEP, SYNCS

IDLE_MIN_NS = 10_000
"""Gaps between scheduler dispatches shorter than 10 us are charm4py's own dispatch cost
(one Cython callback, unpickling), not waiting; only longer gaps become `idle` rows."""

BCAST = '{"bcast":true}'
UNFINISHED = '{"unfinished":true}'

# Entry-method flags (precomputed per EntryMethod at registration).
F_PLAIN, F_INIT, F_MIGRATED, F_SYNC, F_SKIP = range(5)


def _em_info(em, entry_name: str | None) -> tuple[str, int, bool]:
    """(trace name, flag, is coroutine) of an EntryMethod."""
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
    return name, flag, hasattr(getattr(em.C, em.name, None), "_ck_coro")


def install_exec_hooks(entry_method_mod) -> None:
    """Patches EntryMethod so every execution is timed and recorded."""
    EM = entry_method_mod.EntryMethod
    orig_init, orig_run = EM.__init__, EM._run
    ST.orig["em_init"], ST.orig["em_run"] = orig_init, orig_run
    out, cur, P, reg, opened = ST.out, ST.cur, ST, ST.reg, ST.open

    def em_init(self, C, name, profile=False):
        orig_init(self, C, name, profile)
        self._pt = _em_info(self, ST.entry_name)

    def run(self, obj, header, args, ret_fut=False):
        name, flag, coro = self._pt
        if flag == F_SKIP:
            return orig_run(self, obj, header, args, ret_fut=ret_fut)
        try:
            ident = obj._pt_id
        except AttributeError:
            ident = reg.identify(obj, header)
            obj._pt_id = ident
        mid = header.get(b"_pt") if header else None
        t0 = clock()
        parent = cur[0]
        if parent is not None:
            parent[1] += t0 - parent[0]
        rec = [t0, 0, parent, ident, t0, name, mid]
        cur[0] = rec
        if flag:
            _special(flag, obj, ident, mid, t0)
        if coro:
            opened[id(rec)] = rec
        try:
            orig_run(self, obj, header, args, ret_fut=ret_fut)
        finally:
            t1 = clock()
            rec[1] += t1 - rec[0]
            cur[0] = parent
            if parent is not None:
                parent[0] = t1
            if coro:
                opened.pop(id(rec), None)
            o = P.origin
            out[0](("exec", P.pe, t0 - o, t1 - o, rec[1], 0, ident[CAT], ident[COLL], ident[OBJ],
                    ident[INDEX], name, mid, None if mid is None else mid >> MSG_PE_SHIFT, None, None,
                    None, ident[STEP]))

    EM.__init__ = em_init
    EM._run = run


def _special(flag: int, obj, ident: list, mid, t: int) -> None:
    """create / migrate / resumeFromSync rows, at the start of those executions."""
    o, pe = ST.origin, ST.pe
    if flag == F_INIT:
        ST.out[0](("create", pe, t - o, None, None, 0, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX],
                   type(obj).__name__, mid, None if mid is None else mid >> MSG_PE_SHIFT))
    elif flag == F_MIGRATED:
        src = obj.__dict__.pop("_pt_from", None)
        ST.out[0](("migrate", pe, t - o, None, None, 0, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX],
                   "migrate", None, src, None, None, None, ident[STEP]))
    elif flag == F_SYNC:
        ident[SYNCS] += 1
        if not ident[EXPLICIT]:
            ident[STEP] = ident[SYNCS]
        ST.out[0](("step", pe, t - o, None, None, 0, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX],
                   "resumeFromSync", None, None, None, None, None, ident[STEP]))


def record_step(n: int) -> None:
    """tracers.charm.step(n): a `step` row; later execs of this object carry step=n."""
    rec = ST.cur[0]
    ident = NO_OBJECT if rec is None else rec[3]
    if rec is not None:
        ident[STEP] = int(n)
        ident[EXPLICIT] = True
    ST.out[0](("step", ST.pe, clock() - ST.origin, None, None, 0, ident[CAT], ident[COLL], ident[OBJ],
               ident[INDEX], "step", None, None, None, None, None, int(n)))


def install_atsync(chare_mod) -> None:
    """Chare.AtSync marks an LB step boundary (`step` row named AtSync)."""
    Chare = chare_mod.Chare
    orig = Chare.AtSync
    ST.orig["AtSync"] = orig

    def AtSync(self):
        ident = getattr(self, "_pt_id", None) or NO_OBJECT
        ST.out[0](("step", ST.pe, clock() - ST.origin, None, None, 0, ident[CAT], ident[COLL], ident[OBJ],
                   ident[INDEX], "AtSync", None, None, None, None, None, ident[STEP]))
        return orig(self)

    Chare.AtSync = AtSync


def install_send_hooks(charm) -> None:
    """packMsg tags each message with an id in its header; the send calls write `send` rows."""
    out, cur, pend, mute, seq, P, reg = ST.out, ST.cur, ST.pend, ST.mute, ST.seq, ST, ST.reg
    orig_pack = charm.packMsg
    ST.orig["packMsg"] = orig_pack
    em_table = charm.entryMethods

    def packMsg(destObj, msgArgs, header):
        if mute[0]:
            return orig_pack(destObj, msgArgs, header)
        t = clock()
        seq[0] += 1
        mid = P.msg_base + seq[0]
        header[b"_pt"] = mid
        pc = P.pending_create
        if pc is not None:
            header[b"_pc"] = pc
        msg = orig_pack(destObj, msgArgs, header)
        m0 = msg[0]
        if destObj is None:
            size = len(m0)
            dc = header.get(b"dcopy")
            if dc:
                for d in dc:
                    size += d[3]
        else:
            size = None  # local-message optimisation: nothing is serialised
        pend[0] = (m0, mid, size, t)
        return msg

    def _row(p, ep, peer_pe, peer_coll, peer_obj, args, name=None):
        rec = cur[0]
        s = NO_OBJECT if rec is None else rec[3]
        if name is None:
            em = em_table.get(ep)
            name = em._pt[0] if em is not None else None
        out[0](("send", P.pe, p[3] - P.origin, None, None, 0, s[CAT], s[COLL], s[OBJ], s[INDEX],
                name, p[1], peer_pe, peer_coll, peer_obj, p[2], s[STEP], None, None, None, None, None, args))

    orig_array, orig_group, orig_chare = charm.CkArraySend, charm.CkGroupSend, charm.CkChareSend
    ST.orig.update(CkArraySend=orig_array, CkGroupSend=orig_group, CkChareSend=orig_chare)

    def CkArraySend(aid, index, ep, msg):
        orig_array(aid, index, ep, msg)
        p = pend[0]
        if p is None or p[0] is not msg[0]:
            return  # AtSync's raw message, or a tracer message
        pend[0] = None
        ent = reg.arrays.get(aid)
        if index:
            _row(p, ep, None, ent and ent[0], pack_index(index), None)
        else:
            _row(p, ep, None, ent and ent[0], None, BCAST)

    def CkGroupSend(gid, index, ep, msg):
        orig_group(gid, index, ep, msg)
        p = pend[0]
        if p is None or p[0] is not msg[0]:
            return
        pend[0] = None
        ent = reg.groups.get(gid)
        if index >= 0:
            _row(p, ep, index, ent and ent[0], index, None)
        else:
            _row(p, ep, None, ent and ent[0], None, BCAST)

    def CkChareSend(cid, ep, msg):
        orig_chare(cid, ep, msg)
        p = pend[0]
        if p is None or p[0] is not msg[0]:
            return
        pend[0] = None
        _row(p, ep, cid[0], P.main_coll, 0, None)

    charm.packMsg = packMsg
    charm.CkArraySend, charm.CkGroupSend, charm.CkChareSend = CkArraySend, CkGroupSend, CkChareSend
    ST.send_row = _row


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
            ent = ST.reg.groups.get(gid)
            ST.send_row(p, ep, None, ent and ent[0], None, f'{{"multicast":{len(pes)}}}')

    charm.lib = _LibProxy()


def install_dispatch_hooks(charm) -> None:
    """Idle = time between returning to the Charm++ scheduler and its next Python callback."""
    out, P = ST.out, ST
    state = [0, 0]  # depth of nested dispatches, time of the last return to the scheduler

    def enter():
        t = clock()
        if state[0] == 0 and state[1] and t - state[1] > IDLE_MIN_NS:
            o = P.origin
            out[0](("idle", P.pe, state[1] - o, t - o))
        state[0] += 1

    def leave():
        state[0] -= 1
        if state[0] == 0:
            state[1] = clock()

    # No try/finally: an exception here ends the run (handleGeneralError -> abort).
    def wrap5(fn):
        def dispatch(a, b, c, d, e):
            enter()
            fn(a, b, c, d, e)
            leave()

        return dispatch

    def wrap4(fn):
        def dispatch(a, b, c, d):
            enter()
            fn(a, b, c, d)
            leave()

        return dispatch

    for name, wrap in (("recvArrayMsg", wrap5), ("recvGroupMsg", wrap4), ("recvChareMsg", wrap4),
                       ("recvArrayBcast", wrap5), ("buildMainchare", wrap4)):
        orig = getattr(charm, name)
        ST.orig[name] = orig
        setattr(charm, name, wrap(orig))
    ST.dispatch_state = state


def install_migration_hook(charm) -> None:
    """arrayElemLeave runs on the source PE before the element is pickled: note where it was."""
    orig = charm.arrayElemLeave
    ST.orig["arrayElemLeave"] = orig

    def arrayElemLeave(aid, index):
        obj = charm.arrays[aid].get(index)
        if obj is not None:
            obj._pt_from = ST.pe
        return orig(aid, index)

    charm.arrayElemLeave = arrayElemLeave


def install_greenlet_trace() -> None:
    """Coroutine suspensions: pause the running record of the greenlet switched away from."""
    cur = ST.cur

    def trace(event, args):
        if event != "switch" and event != "throw":
            return
        origin, target = args
        now = clock()
        rec = cur[0]
        if rec is not None:
            rec[1] += now - rec[0]
        try:
            origin._pt_cur = rec
        except AttributeError:
            pass
        nxt = getattr(target, "_pt_cur", None)
        if nxt is not None:
            nxt[0] = now
        cur[0] = nxt

    greenlet.settrace(trace)


def unfinished_rows(now: int) -> list[tuple]:
    """Rows for coroutine executions still suspended when the trace closes (e.g. `main`)."""
    rows = []
    o = ST.origin
    for rec in list(ST.open.values()):
        ident, mid = rec[3], rec[6]
        rows.append(("exec", ST.pe, rec[4] - o, now - o, rec[1], 0, ident[CAT], ident[COLL], ident[OBJ],
                     ident[INDEX], rec[5], mid, None if mid is None else mid >> MSG_PE_SHIFT, None, None,
                     None, ident[STEP], None, None, None, None, None, UNFINISHED))
    ST.open.clear()
    return rows
