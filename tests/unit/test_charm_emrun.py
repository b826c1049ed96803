"""The native exec hook does the work of charm4py 1.1's `EntryMethod._run` itself (tracers.charm.emrun):
every case gives the same calls to charm4py, the same return and the same exception as the original
`_run` run unhooked on the same inputs, and the execution is recorded."""

from __future__ import annotations

import gc
import sys
import traceback
import weakref

import numpy as np
import pytest

from tracers.charm import hooks
from tracers.charm._state import ST
from tracers.charm.identity import NO_OBJECT
from tracers.charm.rowbuf import LAYOUT, make_recorder

entry_method = pytest.importorskip("charm4py.entry_method")
KIND = LAYOUT.index("kind")


class FakeCharm:
    """What `_run` touches on the charm object: its calls are logged."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.reducers = type("R", (), {"gather": "gather-reducer"})()
        self.last_em_exec = None

    def exit(self, code):
        self.calls.append(("exit", code))

    def process_em_exc(self, e, obj, header):
        handled = sys.exc_info()  # charm4py sends its stack trace to a blocked caller
        where = traceback.extract_tb(handled[2])[-1].name
        self.calls.append(("process_em_exc", type(e).__name__, str(e), obj.tag, sorted(header, key=repr),
                           handled[1] is e, where))

    def contribute(self, *args):
        self.calls.append(("contribute", *args[:2], type(args[2]).__name__, args[3].tag, args[4]))


class Future:
    def __init__(self, log: list) -> None:
        self.log = log

    def send(self, v):
        self.log.append(("send", v))

    def create_object(self, v):
        self.log.append(("create_object", v))


class Obj:
    def __init__(self) -> None:
        self.tag = "obj"
        ST.reg.remember(self, NO_OBJECT)  # as the tracer's first execution of a chare does

    def add(self, a, b):
        return a + b

    def boom(self, a):
        raise ValueError(f"bad {a}")

    def leave(self, code):
        raise SystemExit(code)

    def stop(self):
        raise GeneratorExit("not an Exception: goes up")


def _cases(log: list) -> list[tuple[str, dict, list, bool]]:
    fut = Future(log)
    return [
        ("add", {}, [1, 2], False),
        ("add", {"is_ray": False}, (3, 4), False),
        ("add", {b"block": fut}, [5, 6], False),
        ("add", {b"block": fut, b"bcast": True, b"bcastret": True, b"sid": 9}, [1, 1], False),
        ("add", {b"block": fut, b"bcast": True}, [2, 2], False),
        ("add", {}, [7, 8, fut], True),  # ret_fut: the original runs it
        ("boom", {}, [1], False),
        ("boom", {b"block": fut}, [2], False),
        ("leave", {}, [3], False),
        ("leave", {}, [None], False),
        ("leave", {}, ["text"], False),
        ("stop", {}, [], False),
    ]


def _run_all(em_cls, charm: FakeCharm, log: list) -> list:
    """Outcome of each case: (return or exception, charm's calls, the future's calls, last_em_exec's name)."""
    out = []
    for name, header, args, ret_fut in _cases(log):
        em = em_cls(Obj, name)
        charm.calls.clear()
        log.clear()
        try:
            res = ("ret", em.run(Obj(), header, args, ret_fut=ret_fut))
        except BaseException as exc:  # noqa: BLE001  the outcome compared
            res = ("raised", type(exc).__name__, str(exc))
        out.append((name, res, list(charm.calls), list(log), charm.last_em_exec.name))
    return out


@pytest.fixture
def hooked(monkeypatch):
    """charm4py's EntryMethod with the native exec hook installed (undone after the test); its fake charm."""
    EM = entry_method.EntryMethod
    charm = FakeCharm()
    monkeypatch.setattr(entry_method, "charm", charm, raising=False)
    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", "1")
    rec, kind = make_recorder()
    if kind != "native":
        pytest.skip(f"native recorder not built ({kind})")
    for attr in ("__init__", "_run"):
        monkeypatch.setattr(EM, attr, getattr(EM, attr))  # restored after the test
    for attr, value in (("rec", rec), ("cur", [None]), ("orig", {}), ("open", {}), ("exec_hook", None)):
        monkeypatch.setattr(ST, attr, value)

    def install():
        hooks.install_exec_hooks(entry_method)
        assert hooks.emrun.replaces(ST.orig["em_run"]) is not None  # the compiled path runs here

    return EM, charm, rec, install


def test_compiled_run_matches_charm4py_run(hooked, capsys):
    EM, charm, rec, install = hooked
    log: list = []
    want = _run_all(EM, charm, log)
    printed = capsys.readouterr().out
    install()
    got = _run_all(EM, charm, log)
    assert got == want
    assert capsys.readouterr().out == printed == "text\n"
    rows = np.frombuffer(rec.take(), dtype="<i8").reshape(-1, len(LAYOUT))
    assert (rows[:, KIND] == hooks.K_EXEC).sum() == len(want)


def test_forget_releases_a_chare(hooked):
    """The hook caches a chare's identity (holding the chare); forget() (a chare migrating away) lets it go."""
    EM, _charm, _rec, install = hooked
    install()
    em, obj = EM(Obj, "add"), Obj()
    assert em.run(obj, {}, [1, 2], ret_fut=False) is None
    ref = weakref.ref(obj)
    del obj
    gc.collect()
    assert ref() is not None  # held by the hook's cache
    ST.exec_hook.forget(ref())
    gc.collect()
    assert ref() is None


class _Proxy:
    aid = 3


class Elem:
    """An array element as the tracer sees it (its proxy's aid, its index)."""

    thisProxy = _Proxy()
    thisIndex = (1, 2)

    def __init__(self) -> None:
        self.count = 0

    def work(self, n):
        self.count += n


@pytest.mark.parametrize("native", ["0", "1"])
def test_recorded_chare_keeps_its_attributes(native, monkeypatch):
    """The tracer keeps a chare's identity beside it, never on it: an attribute added after __init__
    would turn CPython's inline instance values into a dict (every `self.x` then misses the
    interpreter's caches). Both recorders: the same identity in every exec row, nothing added."""
    from paradise.format import pack_index

    charm = FakeCharm()
    EM = entry_method.EntryMethod
    monkeypatch.setattr(entry_method, "charm", charm, raising=False)
    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    rec, kind = make_recorder()
    if kind.split()[0] != ("native" if native == "1" else "python"):
        pytest.skip(f"recorder {kind}")
    for attr in ("__init__", "_run"):
        monkeypatch.setattr(EM, attr, getattr(EM, attr))
    for attr, value in (("rec", rec), ("cur", [None]), ("orig", {}), ("open", {}), ("exec_hook", None)):
        monkeypatch.setattr(ST, attr, value)
    hooks.install_exec_hooks(entry_method)
    em, obj = EM(Elem, "work"), Elem()
    for n in (1, 2, 3):
        em.run(obj, {}, [n], ret_fut=False)
    assert vars(obj) == {"count": 6}
    assert ST.reg.ident_of(obj) is not None
    rows = np.frombuffer(rec.take(), dtype="<i8").reshape(-1, len(LAYOUT))
    execs = rows[rows[:, KIND] == hooks.K_EXEC]
    assert len(execs) == 3
    assert (execs[:, LAYOUT.index("obj")] == pack_index((1, 2))).all()
