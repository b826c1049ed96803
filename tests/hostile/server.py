"""Runs hostile cases: one forked child per case, from a parent that has imported paradise once.

Run as `python -m tests.hostile.server BASE ID...`; prints one JSON line per case. The parent is
a fresh interpreter (not pytest: forking a process whose DuckDB or Arrow threads are running is
unsafe). For each case a first fork builds its folder, the parent records every file's sha256,
a second fork runs `paradise` in-process (new session, address-space limit, its own folder,
HOME and TMPDIR), and the parent waits with a deadline, killing the session on a hang. Cases that
launch a real program run `paradise` as a subprocess under the same limits.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from tests.hostile.case import REGISTRY, Case

WORKERS = 2
"""In-process cases at a time (the CPU-bound ones)."""
LAUNCH_WORKERS = 2
"""Launched-program cases at a time, beside those."""
MARKER = "HOSTILE_CASE_ID"
"""Environment variable every process of a case inherits: finds what a case left running."""


def leftovers(case_id: str) -> list[int]:
    """Processes still running with this case's marker in their environment."""
    needle = f"{MARKER}={case_id}\0".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if needle in (proc / "environ").read_bytes() + b"\0":
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def snapshot(root: Path) -> dict[str, str]:
    """sha256 (or link target / 'dir' / file kind) of every path under root, links not followed."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            try:
                st = p.lstat()
            except OSError:
                continue
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                h = hashlib.sha256()
                try:
                    with open(p, "rb") as fh:
                        for chunk in iter(lambda: fh.read(1 << 20), b""):
                            h.update(chunk)
                    out[rel] = h.hexdigest()
                except OSError as exc:
                    out[rel] = f"unreadable:{exc.errno}"
            else:
                out[rel] = f"special:{st.st_mode:o}"
    return out


def _limits(case: Case) -> None:
    mem = case.mem_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    if case.fsize_bytes is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize_bytes, case.fsize_bytes))


def _env(base: Path, case: Case) -> dict[str, str]:
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("PARADISE_")]:
        env.pop(k)
    env.update(HOME=str(base / "home"), TMPDIR=str(base / "tmp"), COLUMNS="100", LINES="50", TERM="dumb")
    env.pop("FORCE_COLOR", None)
    env.update(dict(case.env))
    env[MARKER] = case.id
    return env


def _sinks(base: Path, case: Case) -> tuple[tuple[int, int], list[subprocess.Popen]]:
    """File descriptors for the case's stdout and stderr. Under a file-size limit (which would
    cut these files too) they are pipes into `cat` processes that write the files unlimited."""
    names = (base / "meta" / "stdout", base / "meta" / "stderr")
    if case.fsize_bytes is None:
        return tuple(os.open(n, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) for n in names), []  # type: ignore[return-value]
    fds, cats = [], []
    for n in names:
        with open(n, "wb") as fh:
            cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=fh)
        cats.append(cat)
        fds.append(cat.stdin.fileno())
    return (fds[0], fds[1]), cats


def _run_in_child(base: Path, case: Case, sinks: tuple[int, int]) -> None:
    """The forked child: becomes `paradise ARGV` run in work/; never returns."""
    code = 1
    try:
        os.setsid()
        work = base / "work"
        os.chdir(work)
        os.environ.clear()
        os.environ.update(_env(base, case))
        import tempfile

        tempfile.tempdir = str(base / "tmp")
        out, err = sinks
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        _limits(case)
        sys.argv = ["paradise", *case.argv]
        from paradise.cli.main import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
    except BaseException:  # noqa: BLE001 - the child reports anything as a traceback
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
        os._exit(code & 0xFF)


def _setup(base: Path, case: Case) -> str | None:
    """Builds the case folder in a forked child (keeps this parent free of Arrow threads)."""
    for sub in ("work", "meta", "home", "tmp"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    if case.setup is None:
        return None
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.chdir(base / "work")
            case.setup(base / "work")
        except BaseException:  # noqa: BLE001
            with open(base / "meta" / "setup-error", "w") as fh:
                traceback.print_exc(file=fh)
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        err = base / "meta" / "setup-error"
        return err.read_text() if err.exists() else f"setup exited with {status}"
    return None


class Running:
    def __init__(self, case: Case, base: Path, before: dict[str, str]) -> None:
        self.case, self.base, self.before = case, base, before
        self.t0 = time.monotonic()
        self.signalled = False
        self.proc: subprocess.Popen | None = None
        self.pid = 0
        sinks, self.cats = _sinks(base, case)
        if case.launch:
            paradise = str(Path(sys.executable).parent / "paradise")
            self.proc = subprocess.Popen(
                [paradise, *case.argv], cwd=base / "work", env=_env(base, case), stdout=sinks[0], stderr=sinks[1],
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=lambda: _limits(case),
            )
            self.pid = self.proc.pid
        else:
            pid = os.fork()
            if pid == 0:
                _run_in_child(base, case, sinks)
            self.pid = pid
        if self.cats:
            for cat in self.cats:  # the case holds its own copies of the write ends
                cat.stdin.close()
        else:
            for fd in sinks:
                os.close(fd)


def _finish(run: Running, status: int | None, timed_out: bool) -> dict:
    base, case = run.base, run.case
    left: list[int] = []
    if case.launch:  # the job must end with paradise: give it a moment, then look
        deadline = time.monotonic() + 3.0
        while (left := leftovers(case.id)) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        os.killpg(run.pid, signal.SIGKILL)  # whatever the case started and left behind
    except (ProcessLookupError, PermissionError):
        pass
    for cat in run.cats:
        try:
            cat.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cat.kill()
    after = snapshot(base / "work")
    changed = sorted(k for k, v in run.before.items() if after.get(k) != v)
    created = sorted(k for k in after if k not in run.before)
    tmp_left = sorted(str(p.relative_to(base / "tmp")) for p in (base / "tmp").rglob("*")
                      if not _torch_cache(p.relative_to(base / "tmp")))
    rc = None if status is None else os.waitstatus_to_exitcode(status)
    read = lambda n: (base / "meta" / n).read_bytes().decode("utf-8", "backslashreplace")  # noqa: E731
    return {
        "id": case.id, "rc": rc, "timed_out": timed_out, "wall_s": round(time.monotonic() - run.t0, 2),
        "stdout": read("stdout")[-20000:], "stderr": read("stderr")[-20000:],
        "changed": changed, "created": created, "tmp_left": tmp_left, "leftover_pids": left,
    }  # fmt: skip


def _torch_cache(rel: Path) -> bool:
    """torch's own persistent compile cache (an empty `torchinductor_<user>` folder that importing
    torch._dynamo makes in $TMPDIR, e.g. when the traced program saves a distributed checkpoint): the
    user's program's, meant to outlive the run, not a temporary file paradise left behind."""
    return rel.parts[0].startswith("torchinductor_")


def run_cases(base: Path, ids: list[str], emit) -> None:
    """Runs the cases (WORKERS in-process and LAUNCH_WORKERS launched at a time); calls emit(result)
    as each ends."""
    # launched programs mostly wait (start-up, timeouts): they run in slots of their own beside
    # the in-process cases, so the longest cases overlap everything else
    queues = {True: [i for i in ids if REGISTRY[i].launch], False: [i for i in ids if not REGISTRY[i].launch]}
    slots = {True: LAUNCH_WORKERS, False: WORKERS}
    running: dict[int, Running] = {}
    while queues[True] or queues[False] or running:
        for launch, queue in queues.items():
            while queue and sum(1 for r in running.values() if r.case.launch == launch) < slots[launch]:
                cid = queue.pop(0)
                case = REGISTRY[cid]
                cbase = base / cid
                err = _setup(cbase, case)
                if err is not None:
                    emit({"id": cid, "setup_error": err})
                    continue
                r = Running(case, cbase, snapshot(cbase / "work"))
                running[r.pid] = r
        done = False
        for pid, r in list(running.items()):
            sig = r.case.signal_after
            if sig and not r.signalled and time.monotonic() - r.t0 > sig[1]:
                os.kill(pid, sig[0])
                r.signalled = True
            got, status = os.waitpid(pid, os.WNOHANG)
            if got:
                del running[pid]
                emit(_finish(r, status, False))
                done = True
            elif time.monotonic() - r.t0 > r.case.timeout_s:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                del running[pid]
                emit(_finish(r, None, True))
                done = True
        if not done:
            time.sleep(0.01)


def preload() -> None:
    """Imports what most commands need, once, so each child starts warm."""
    import contextlib
    import importlib
    import pkgutil

    import duckdb  # noqa: F401
    import pyarrow  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import rich.console  # noqa: F401
    with contextlib.suppress(ImportError):  # typer 0.29 converts options with pydantic, imported at the first command (0.1 s)
        import typer._adapters  # noqa: F401

    import hints.kinds  # noqa: F401
    import paradise
    import paradise.cli.main  # noqa: F401

    for pkg in ("paradise.analyses", "paradise.events", "paradise.report", "paradise.cli", "paradise.engines", "paradise.importers",
                "paradise.compare", "paradise.whatif", "paradise.store"):
        mod = importlib.import_module(pkg)
        for info in pkgutil.iter_modules(mod.__path__):
            try:
                importlib.import_module(f"{pkg}.{info.name}")
            except ImportError:  # an optional dependency (dask) that is not installed
                pass
    _ = paradise


def main(argv: list[str]) -> None:
    import tests.hostile.corpus  # noqa: F401 - fills REGISTRY

    base = Path(argv[0])
    ids = argv[1:] or sorted(REGISTRY)
    preload()

    def emit(result: dict) -> None:
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()

    run_cases(base, ids, emit)


if __name__ == "__main__":
    main(sys.argv[1:])
