"""Collection creation hooks: stable names, creation sends, and the mapping consumer hook.

Arrays (and singleton chares, which charm4py builds as 1-element arrays) can only be created
on PE 0, groups on any PE. The wrapper names the collection, puts the name in the creation
message header (b'_pc') so every PE that builds an element learns it, and, when a mapping
hint names the collection, passes `map=` to the array.
"""

from __future__ import annotations

from tracers.charm._state import ST
from tracers.charm.rowbuf import NULL

CREATE_BCAST = '{"create":true,"bcast":true}'
CREATE_ONE = '{"create":true}'


def _creation_send(peer_coll: str | None, peer_pe: int | None, peer_obj: int | None, args: str) -> None:
    """The creation message as a `send` row (its constructor execs carry the same msg)."""
    p = ST.pend[0]
    ST.pend[0] = None
    if p is None or not ST.tracing or ST.send_row is None:
        return
    code = ST.strings.code
    ST.send_row(p, code("__init__"), NULL if peer_pe is None else peer_pe, code(peer_coll),
                NULL if peer_obj is None else peer_obj, code(args))


def _tell_others(kind: int, rid: int, name: str, cat: str) -> None:
    """Broadcast aid -> name so PEs without elements can name the array in their send rows."""
    if ST.group is None or ST.pes <= 1 or not ST.tracing:
        return
    ST.mute[0] += 1
    try:
        ST.group.learn(kind, rid, name, cat)
    finally:
        ST.mute[0] -= 1


def install_creation_hooks(chare_mod, charm) -> None:
    Array, Group, Chare = chare_mod.Array, chare_mod.Group, chare_mod.Chare
    orig_array_new, orig_group_new, orig_chare_new = Array.__new__, Group.__new__, Chare.__new__
    orig_insert_gen = chare_mod.array_ckInsert_gen
    ST.orig.update(array_new=orig_array_new, group_new=orig_group_new, chare_new=orig_chare_new,
                   ckInsert_gen=orig_insert_gen)
    reg = ST.reg

    def array_new(cls, C, dims=None, ndims=-1, args=[], map=None, useAtSync=False):  # noqa: B006
        cat = "chare" if ST.single_next else "array"
        ST.single_next = False
        name = reg.new_name(C.__name__, charm.myPe())
        cat = reg.category(C, cat)
        if map is None and ST.mapper is not None and cat == "array":
            map = ST.mapper.map_for(name, dims)
        ST.pending_create = (name, cat)
        try:
            proxy = orig_array_new(cls, C, dims, ndims, args, map, useAtSync)
        finally:
            ST.pending_create = None
        reg.arrays[proxy.aid] = (name, cat)
        sized = dims is not None and (dims if isinstance(dims, int) else sum(dims)) > 0
        if sized:
            _creation_send(name, None, None, CREATE_BCAST)
        else:
            ST.pend[0] = None
        _tell_others(0, proxy.aid, name, cat)
        return proxy

    def group_new(cls, C, args=[], onPEs=None):  # noqa: B006
        name = reg.new_name(C.__name__, charm.myPe())
        cat = reg.category(C, "group")
        if C.__name__ == "_TracerGroup":
            ST.mute[0] += 1
        ST.pending_create = (name, cat)
        try:
            proxy = orig_group_new(cls, C, args, onPEs)
        finally:
            ST.pending_create = None
            if C.__name__ == "_TracerGroup":
                ST.mute[0] -= 1
        reg.groups[proxy.gid] = (name, cat)
        _creation_send(name, None, None, CREATE_BCAST)
        return proxy

    def chare_new(cls, chare_type=None, args=[], onPE=-1):  # noqa: B006
        if chare_type is not None:
            ST.single_next = True
        return orig_chare_new(cls, chare_type, args, onPE)

    def ckInsert_gen(epIdx):
        insert = orig_insert_gen(epIdx)

        def ckInsert(proxy, index, args=[], onPE=-1, useAtSync=False, single=False, is_ray=False):  # noqa: B006
            ent = reg.arrays.get(proxy.aid)
            ST.pending_create = ent
            try:
                insert(proxy, index, args, onPE, useAtSync, single, is_ray)
            finally:
                ST.pending_create = None
            idx = (index,) if isinstance(index, int) else tuple(index)
            from paradise.format import pack_index

            _creation_send(ent[0] if ent else None, onPE if onPE >= 0 else None, pack_index(idx), CREATE_ONE)

        return ckInsert

    Array.__new__ = staticmethod(array_new)
    Group.__new__ = staticmethod(group_new)
    Chare.__new__ = staticmethod(chare_new)
    chare_mod.array_ckInsert_gen = ckInsert_gen
