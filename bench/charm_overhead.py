"""Cost of the charm4py tracer: each program traced and untraced, side by side, on 1 and 2 PEs.

    .venv/bin/python bench/charm_overhead.py [--reps 3] [--pes 1 2] [--only stencil2d ...] [--micro] [--before DIR]

For every (program, PEs) it runs REPS untraced/traced pairs (interleaved, so a busy machine
hurts both alike) and prints the median times, their ratio, and the tracer's cost per
message = (traced - untraced) / messages, messages = `send` rows in the traced run's trace.
Three times are compared: the program's own `elapsed_s=` from its RESULT line when it prints
one (the measured region, without interpreter start-up and the final trace compaction), its
`cpu_s=` when it prints one (the CPU time of PE 0's process over the same region, all its threads:
what a busy machine does not inflate), and the whole charmrun wall time. Beside each ratio of
medians, the 95 % interval of the median of the rounds' own traced/untraced ratios (order
statistics, distribution-free; rounds are interleaved pairs), which says whether a limit such as
1.03x is met, missed or not decided by the rounds run. A tracer that spools (PEs append raw rows, converted to Parquet
after charmrun exits, as `paradise trace charm` does) has its conversion timed apart ("compact s",
not inside wall; "wall+c" adds it back); an older tracer writes Parquet inside wall (compact s 0).

`--micro` first prices the hooks alone, in-process and without charmrun: a fake charm4py
(packMsg, CkArraySend, recvArrayMsg as cheap stand-ins; charm4py's own EntryMethod) bounces one local
array message MICRO_HOPS times through the real hooks, in fresh interpreters: not hooked, hooked
with the pure-Python recorder (PARADISE_NATIVE_RECORDER=0) and hooked with the native one; it
prints the minimum over MICRO_REPS short repetitions (the least-disturbed one on a busy machine). The
difference is the tracer's CPU cost per message (one send row + one exec row + dispatch).
`--before DIR` adds the tracer of another source tree (e.g. `git archive main | tar -x -C DIR`)
to both measurements, run in the same rounds (PYTHONPATH=DIR for its traced runs).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(os.environ.get("PARADISE_BENCH_TREE") or Path(__file__).resolve().parents[1])
"""The source tree whose tracer runs (PARADISE_BENCH_TREE: the --before tree, for the micro children)."""
sys.path.insert(0, str(ROOT))

from tracers.charm.launch import launch  # noqa: E402

PROGRAMS: dict[str, tuple[str, list[str]]] = {
    # name: (path, args) sized to run a few seconds each on a small machine
    "pingpong": ("tests/charm_programs/pingpong.py", ["50000"]),
    "pingpong-1": ("tests/charm_programs/pingpong.py", ["1"]),  # one hop: wall = start-up + exit alone
    "histsort": ("examples/histsort.py", []),
    "stencil2d": ("examples/stencil2d.py", ["--grid", "8", "8", "--block", "128", "--iters", "100"]),
    "masterworker": ("examples/masterworker.py", []),
    "wavefront": ("examples/wavefront.py", []),
}
RUN_TIMEOUT_S = 300
ELAPSED_RE = re.compile(r"elapsed_s=([0-9.eE+-]+)")
CPU_RE = re.compile(r"cpu_s=([0-9.eE+-]+)")


CLOSE_RE = re.compile(r"(?:trace file written|closed) in ([0-9.]+) s after the program's end")


def _compact(trace_dir: Path) -> float:
    """Seconds to convert a run's spools into its Parquet files (0 when it left none)."""
    import time

    try:
        from paradise.format.compact import convert_all
    except ImportError:  # a --before tree without spools
        return 0.0
    t0 = time.monotonic()
    files, _ = convert_all(trace_dir)
    return time.monotonic() - t0 if files else 0.0


def _one(path: Path, args: list[str], pes: int, trace_dir: Path | None,
         tree: Path | None = None) -> tuple[float, float | None, float, float, float | None]:
    """(wall s, the program's elapsed_s, the slowest PE's trace close s, the spools' conversion s, the
    program's cpu_s) of one run; `tree`: the source tree whose tracer runs (PYTHONPATH; default this one)."""
    old = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = str(tree)
    try:
        res = launch(path, args, pes, trace_dir=trace_dir, capture=True, timeout_s=RUN_TIMEOUT_S)
    finally:
        if tree is not None:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old
    if res.returncode != 0 or "RESULT ok" not in (res.stdout or ""):
        raise RuntimeError(f"{path.name} +p{pes} {'traced' if trace_dir else 'untraced'} failed "
                           f"({res.returncode}): {(res.stderr or '')[-500:]}")
    result = res.stdout.split("RESULT ok", 1)[1]
    m, c = ELAPSED_RE.search(result), CPU_RE.search(result)
    closes = [float(c) for c in CLOSE_RE.findall((res.stderr or "") + (res.stdout or ""))]
    compact = _compact(trace_dir) if trace_dir is not None else 0.0
    return (res.wall_s, float(m.group(1)) if m else None, max(closes, default=0.0), compact,
            float(c.group(1)) if c else None)


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the median (order statistics): None when too few values."""
    from math import comb

    n, xs = len(values), sorted(values)
    k, below = 0, 0.0  # k = how many values below the interval: P(Binomial(n, 1/2) < k) <= (1 - level) / 2
    while below + comb(n, k) / 2**n <= (1 - level) / 2:
        below += comb(n, k) / 2**n
        k += 1
    return None if k == 0 else (xs[k - 1], xs[n - k])


def _messages(trace_dir: Path) -> int:
    con = duckdb.connect()
    n = con.sql(f"SELECT count(*) FROM read_parquet('{trace_dir}/*.parquet') WHERE kind = 'send'").fetchall()[0][0]
    con.close()
    return int(n)


def bench(path: Path, args: list[str], pes: int, reps: int, tracers: dict[str, Path | None]) -> dict:
    """Medians of REPS interleaved rounds (untraced, then each tracer) of one program; per tracer
    (prog/cpu/wall: untraced s, traced s, ratio, us/msg, interval of the rounds' ratios) and its close s."""
    wall: dict[str, list[float]] = {k: [] for k in ("untraced", *tracers)}
    prog: dict[str, list[float | None]] = {k: [] for k in wall}
    cpu: dict[str, list[float | None]] = {k: [] for k in wall}
    close: dict[str, list[float]] = {k: [] for k in tracers}
    compact: dict[str, list[float]] = {k: [] for k in tracers}
    wallc: dict[str, list[float]] = {k: [] for k in tracers}
    msgs = 0
    tmp = Path(tempfile.mkdtemp(prefix="paradise-bench-"))
    try:
        for r in range(reps):
            w, p, _, _, u = _one(path, args, pes, None)
            wall["untraced"].append(w)
            prog["untraced"].append(p)
            cpu["untraced"].append(u)
            for label, tree in tracers.items():
                out = tmp / f"{label}-{r}"
                w, p, c, k, u = _one(path, args, pes, out, tree)
                wall[label].append(w)
                prog[label].append(p)
                cpu[label].append(u)
                close[label].append(c)
                compact[label].append(k)
                wallc[label].append(w + k)
                msgs = _messages(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    row: dict = {"messages": msgs}
    for label in tracers:
        row[label] = {"close": statistics.median(close[label]), "compact": statistics.median(compact[label]),
                      "wall+c": statistics.median(wallc[label]) / statistics.median(wall["untraced"])}
        for kind, times in (("prog", prog), ("cpu", cpu), ("wall", wall)):
            if None in times["untraced"] or None in times[label]:
                continue
            a, b = statistics.median(times["untraced"]), statistics.median(times[label])
            ci = median_interval([t / u for t, u in zip(times[label], times["untraced"])])
            row[label][kind] = (a, b, b / a, (b - a) / msgs * 1e6 if msgs else float("nan"), ci)
    return row


MICRO_HOPS = 500
MICRO_REPS = 2000
"""Many short repetitions (~0.5 ms each, under a scheduler time slice): on a loaded machine some
run undisturbed, and the minimum is theirs (60 x 20 000 hops moved by 2x at load 10)."""


def _micro_child(traced: bool) -> float:
    """ns per simulated hop (min over MICRO_REPS runs of MICRO_HOPS hops) in this process."""
    import time

    os.environ["CHARM_NOLOAD"] = "1"  # charm4py's EntryMethod without loading the Charm++ library
    from charm4py import entry_method

    EntryMethod = entry_method.EntryMethod  # the real one: its _run is what the exec hook wraps

    class Proxy:
        aid = 0

    class Player:
        def __init__(self):
            self.thisProxy, self.thisIndex = Proxy(), (0,)

        def ball(self, n, payload):
            header = {"is_ray": False}
            msg = charm.packMsg(self, (n + 1, payload), header)
            charm.CkArraySend(0, (1,), 5, msg)

    class Charm:  # local-message path: packMsg stores (header, args), the message is a tag
        def __init__(self):
            # charm4py 1.1's Charm.__init__ sets packMsg and CkArraySend as instance attributes (its
            # Cython library's functions), so every call looks them up in the instance dict: so here
            self.packMsg, self.CkArraySend = self._packMsg, self._CkArraySend

        def _packMsg(self, destObj, msgArgs, header):
            self.last = (header, msgArgs)
            return (b"_local:1", [])

        def _CkArraySend(self, aid, index, ep, msg):
            pass

        def recvArrayMsg(self, aid, index, ep, msg, dcopy_start):
            header, args = self.last
            self.entryMethods[ep].run(obj, header, args, ret_fut=False)  # as charm4py's invokeEntryMethod

        CkGroupSend = CkChareSend = recvGroupMsg = recvChareMsg = recvArrayBcast = buildMainchare = None

    charm, mod = Charm(), entry_method
    entry_method.charm = charm  # charm4py sets this global at start (charm.last_em_exec)
    charm.entryMethods = {}
    if traced:
        from tracers.charm import hooks

        try:
            from tracers.charm.dispatch import install_dispatch_hooks
        except ImportError:  # a --before tree: the dispatch hooks were in hooks.py
            install_dispatch_hooks = hooks.install_dispatch_hooks
        from tracers.charm._state import ST, clock

        ST.reg.arrays[0] = ("Player#0", "array")
        ST.pe, ST.origin = 0, clock()
        rec = getattr(ST, "rec", None)  # None: a tracer from before the recorders (--before), rows in ST.buf
        if rec is not None:
            rec.pe, rec.origin = ST.pe, ST.origin
        hooks.install_exec_hooks(mod)
        hooks.install_send_hooks(charm)
        charm.recvGroupMsg = charm.recvChareMsg = charm.buildMainchare = lambda a, b, c, d: None
        charm.recvArrayBcast = lambda a, b, c, d, e: None
        install_dispatch_hooks(charm)
        hooks.install_greenlet_trace()
    charm.entryMethods[5] = EntryMethod(Player, "ball")
    charm.last = ({}, (0, b"x" * 64))
    obj, recv, best = Player(), charm.recvArrayMsg, float("inf")
    for _ in range(MICRO_REPS):
        if traced:
            rec.clear() if rec is not None else ST.buf.clear()
        t = time.perf_counter()
        for _ in range(MICRO_HOPS):
            recv(0, (0,), 5, b"_local:1", 0)
        best = min(best, time.perf_counter() - t)
    if traced:
        rows = len(rec) if rec is not None else len(ST.buf) // 144
        assert rows >= 2 * MICRO_HOPS, rows  # one send and one exec row per hop (+ idle rows)
    return best / MICRO_HOPS * 1e9


def micro(rounds: int, before: Path | None = None) -> None:
    """Plain vs hooked hop cost with each recorder (and the tracer of the `before` tree), `rounds`
    interleaved rounds of fresh interpreters."""
    import subprocess

    sides = {"plain": ("plain", "1", ROOT), "python recorder": ("traced", "0", ROOT),
             "native recorder": ("traced", "1", ROOT)}
    if before is not None:
        sides = {"plain": sides["plain"], "before": ("traced", "1", before), **dict(list(sides.items())[1:])}
    times: dict[str, list[float]] = {k: [] for k in sides}
    kinds: dict[str, str] = {}
    for _ in range(rounds):
        for label, (flag, native, tree) in sides.items():
            env = dict(os.environ, PARADISE_NATIVE_RECORDER=native)
            env["PARADISE_BENCH_TREE"] = str(tree)
            res = subprocess.run([sys.executable, __file__, "--micro-child", flag], capture_output=True, text=True,
                                 check=True, cwd=tree, env=env)
            kind, ns = res.stdout.split()[-2:]
            kinds[label] = kind
            times[label].append(float(ns))
    a = statistics.median(times["plain"])
    print(f"micro (in-process hooks, 1 local array message per hop, min of {MICRO_REPS}x{MICRO_HOPS} hops, "
          f"median of {rounds} interpreters): plain {a:.0f} ns/hop")
    for label in list(sides)[1:]:
        b = statistics.median(times[label])
        print(f"  traced, {label:<16} ({kinds[label]:>6} ran): {b:.0f} ns/hop, tracer {b - a:.0f} ns/msg, "
              f"{b / a:.2f}x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--only", nargs="+", default=None, help="program names (default: all that exist)")
    ap.add_argument("--micro", action="store_true", help="also price the hooks alone, in-process (see above)")
    ap.add_argument("--micro-rounds", type=int, default=3)
    ap.add_argument("--micro-child", choices=("plain", "traced"), help=argparse.SUPPRESS)
    ap.add_argument("--no-programs", action="store_true", help="only the --micro measurement")
    ap.add_argument("--before", type=Path, default=None,
                    help="a source tree (e.g. `git worktree add /tmp/main main`) whose tracer runs beside this one")
    a = ap.parse_args(argv)
    if a.micro_child:
        ns = _micro_child(a.micro_child == "traced")
        from tracers.charm._state import ST

        print(getattr(ST, "recorder_kind", "old").split()[0], f"{ns:.1f}")
        return 0
    names = a.only or list(PROGRAMS)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    if a.micro:
        micro(a.micro_rounds, a.before.resolve() if a.before else None)
    if a.no_programs:
        return 0
    tracers: dict[str, Path | None] = {"now": None}
    if a.before is not None:
        tracers = {"before": a.before.resolve(), "now": None}
    print(f"charm4py tracer overhead: median of {a.reps} interleaved rounds (untraced, {', '.join(tracers)}) per row"
          + (f"; before = the tracer of {a.before}" if a.before else ""))
    print(f"{'program':<13}{'PEs':>4}{'messages':>10}  {'time':<5}{'tracer':<8}{'untraced s':>11}{'traced s':>10}"
          f"{'ratio':>7}{'round ratios 95%':>18}{'us/msg':>8}{'close s':>9}{'compact s':>10}{'wall+c':>7}")
    for name in names:
        rel, args = PROGRAMS[name]
        path = ROOT / rel
        if not path.exists():
            print(f"{name:<13}  (skipped: {rel} not found)")
            continue
        for pes in a.pes:
            try:
                row = bench(path, args, pes, a.reps, tracers)
            except RuntimeError as exc:  # a hung or failed run (either side) is reported, not fatal
                print(f"{name:<13}{pes:>4}  (skipped: {exc})")
                continue
            for kind in ("prog", "cpu", "wall"):
                for label in tracers:
                    if kind not in row[label]:
                        continue
                    plain, traced, ratio, per_msg, ci = row[label][kind]
                    ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "(few rounds)"
                    close = (f"{row[label]['close']:>9.3f}{row[label]['compact']:>10.3f}{row[label]['wall+c']:>7.2f}"
                             if kind == "wall" else "")
                    print(f"{name:<13}{pes:>4}{row['messages']:>10}  {kind:<5}{label:<8}{plain:>11.3f}{traced:>10.3f}"
                          f"{ratio:>7.3f}{ci_text:>18}{per_msg:>8.1f}{close}")
            sys.stdout.flush()
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    print("prog: the program's own elapsed_s (measured region); cpu: its cpu_s (PE 0's process CPU over that "
          "region); wall: whole charmrun run incl. start-up and the PEs' trace close. round ratios 95%: interval "
          "of the median of the rounds' traced/untraced ratios. us/msg = (traced - untraced) / send rows. close s: the slowest PE's trace "
          "close after the program's end (inside wall), as the tracer reports it (0: not reported). "
          "compact s: converting the spools to Parquet after charmrun exits (outside wall; 0: the tracer "
          "wrote Parquet inside wall). wall+c: (wall + compact s) / untraced wall.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
