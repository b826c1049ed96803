"""`paradise tune charm|torch`: the loop trace -> analyze -> hints -> timed runs -> keep what a test
says is faster, repeated on the hinted program (paradise.tune; docs/tune.md). DIR holds tune.json
(resumed when the same command runs again), best/ (use with --hints), tune.html and the runs' folders."""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import typer

from paradise.errors import InvalidOption, OutputExists, ParadiseError, TraceNotFound

app = typer.Typer(help="Tune a program from its own traces: keep only the hints that measurably help.",
                  no_args_is_help=True)
OWNED = re.compile(r"^(tune\.json|tune\.html|best|final|it\d+|\.tune\..*\.tmp)$")
"""What a tune writes into DIR: a folder holding anything else is not used."""
RESUMED_ANYWAY = ("budget_min", "iterations", "argv")
"""Options a resumed tune may change (a larger budget continues a tune that ran out)."""


class TuneFailed(ParadiseError):
    """The baseline program failed: nothing to tune."""


def _options(rounds: int, confidence: float, iterations: int, budget_min: float, check: str | None,
             time_regex: str | None, time_unit: str, kinds: str | None) -> tuple[str, ...] | None:
    from paradise.tune.runner import UNITS

    if not 2 <= rounds <= 100:
        raise InvalidOption(f"--rounds: {rounds} is out of range (2..100)")
    if not (math.isfinite(confidence) and 0.5 <= confidence < 1):
        raise InvalidOption(f"--confidence: {confidence:g} is out of range (0.5 <= c < 1)")
    if not 1 <= iterations <= 20:
        raise InvalidOption(f"--iterations: {iterations} is out of range (1..20)")
    if not (math.isfinite(budget_min) and 0 < budget_min <= 7 * 24 * 60):
        raise InvalidOption(f"--budget-min: {budget_min:g} is out of range (minutes, > 0, at most a week)")
    for opt, rx in (("--check", check), ("--time-regex", time_regex)):
        if rx is not None:
            try:
                compiled = re.compile(rx, re.MULTILINE)
            except re.error as exc:
                raise InvalidOption(f"{opt} {rx!r}: not a regular expression ({exc})") from None
            if opt == "--time-regex" and compiled.groups < 1:
                raise InvalidOption(f"--time-regex {rx!r}: needs a group around the number, e.g. 'elapsed_s=([0-9.]+)'")
    if time_unit not in UNITS:
        raise InvalidOption(f"--time-unit {time_unit!r}: one of {', '.join(UNITS)}")
    if kinds is None:
        return None
    from paradise.tune.advisor import TRIED

    chosen = tuple(k.strip() for k in kinds.split(",") if k.strip())
    bad = [k for k in chosen if k not in TRIED]
    if bad or not chosen:
        raise InvalidOption(f"--kinds {kinds!r}: choose from {', '.join(TRIED)}")
    return chosen


def _prepare(out: Path, program: Path, command: dict[str, Any], force: bool) -> None:
    """A new DIR, or one this same tune wrote (resumed); --force starts over in a DIR a tune wrote."""
    from paradise.store.output import prepare_output_folder

    prepare_output_folder(out, inputs=[program])
    foreign = [p.name for p in out.iterdir() if not OWNED.match(p.name)]
    if foreign:
        raise OutputExists(f"{out}: holds files a tune did not write ({', '.join(sorted(foreign)[:3])}); "
                           "choose another -o")
    rec = out / "tune.json"
    if not rec.is_file():
        return
    try:
        old = json.loads(rec.read_text()).get("command", {})
    except (OSError, ValueError, AttributeError):
        old = None
    same = isinstance(old, dict) and {k: v for k, v in old.items() if k not in RESUMED_ANYWAY} == \
        {k: v for k, v in command.items() if k not in RESUMED_ANYWAY}
    if same and not force:
        print(f"paradise: resuming the tune in {out} (runs already measured are not repeated)", file=sys.stderr)
        return
    if not force:
        differ = sorted(k for k in command if k not in RESUMED_ANYWAY and (old or {}).get(k) != command[k])
        raise OutputExists(f"{out}: holds a tune of another command (differs in {', '.join(differ) or 'its record'}); "
                           "pass --force to start over")
    for p in out.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def run(runtime: str, program: Path, args: list[str], procs: int, out: Path, *, rounds: int, confidence: float,
        iterations: int, budget_min: float, check: str | None, time_regex: str | None, time_unit: str,
        kinds: str | None, force: bool, echo: Any = None, argv: list[str] | None = None,
        timeout: float | None = None) -> dict[str, Any]:
    """The whole tune; returns tune.json's content (also written to DIR)."""
    from paradise.cli.run_options import check_run_options
    from paradise.tune.advisor import CliAdvisor
    from paradise.tune.loop import BaselineFailed, Settings, Tune
    from paradise.tune.record import Record
    from paradise.tune.runner import RUN_TIMEOUT_S, CharmRunner, Measure, TorchRunner

    check_run_options(timeout, procs, "--pes" if runtime == "charm" else "--nproc")
    chosen = _options(rounds, confidence, iterations, budget_min, check, time_regex, time_unit, kinds)
    if not program.is_file():
        raise TraceNotFound(f"{program}: no such program (or not a regular file)")
    command = {"runtime": runtime, "program": str(program.resolve()), "args": list(args), "procs": procs,
               "rounds": rounds, "confidence": confidence, "iterations": iterations, "budget_min": budget_min,
               "check": check, "time_regex": time_regex, "time_unit": time_unit, "kinds": chosen,
               "argv": argv or ["paradise", "tune", runtime, *sys.argv[3:]]}
    command["kinds"] = list(chosen) if chosen else None
    _prepare(out, program, command, force)
    measure = Measure(time_regex, time_unit, check)
    cls = CharmRunner if runtime == "charm" else TorchRunner
    runner = cls(program=program.resolve(), args=list(args), procs=procs, measure=measure,
                 timeout_s=timeout or RUN_TIMEOUT_S)
    rec = Record.open(out, command)
    rec.data["command"] = command
    settings = Settings(rounds=rounds, confidence=confidence, iterations=iterations, budget_s=budget_min * 60,
                        kinds=chosen)
    say = echo or (lambda s: print(s, file=sys.stderr, flush=True))
    say(f"paradise tune: {program.name} on {procs} {'PEs' if runtime == 'charm' else 'ranks'}, {rounds} rounds "
        f"per trial, paired t-test (one-sided, per-round log ratios) at {confidence:g} confidence; load average {os.getloadavg()[0]:.2f}")
    try:
        data = Tune(out, runner, CliAdvisor(runtime, program.stem, procs), settings, rec, echo=say).run()
    except BaselineFailed as exc:
        raise TuneFailed(f"{program}: {exc}") from None
    data["load"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rec.save()
    write_page(out, data)
    return data


def write_page(out: Path, data: dict[str, Any]) -> None:
    from plotly.offline import get_plotlyjs

    from paradise.report.tune_page import build

    (out / "tune.html").write_text(build(data, plotly_js=get_plotlyjs()))



CONTEXT = {"allow_interspersed_args": False, "ignore_unknown_options": True}
H_ROUNDS = "Interleaved rounds per trial (each runs the current best and every candidate once)."
H_CONF = "Family-wise confidence of one trial's one-sided paired t-tests on per-round log(hinted / baseline) (Bonferroni over its candidates)."
H_CHECK = "Regex of the program's result lines (e.g. 'checksum=\\S+'): a hinted run whose matches differ is rejected."
H_TIMEOUT = "End a run after this many seconds (it counts as failed: a hinted one drops its hint). Default 900."
H_TIME = "Regex whose first group is the run's time as the program prints it (default: wall time of the launch)."


def _finish(data: dict[str, Any], out: Path, as_json: bool) -> None:
    from paradise.tune.summary import table

    if as_json:
        typer.echo(json.dumps(data, indent=1, sort_keys=True, default=float))
    else:
        typer.echo(table(data))
        typer.echo(f"record: {out / 'tune.json'}; page: {out / 'tune.html'}")


def _guard(fn: Any) -> Any:
    from tracers.job import JobTerminated

    try:
        return fn()
    except JobTerminated as exc:
        print(f"paradise: tune stopped ({exc} to paradise); run the same command again to resume", file=sys.stderr)
        raise typer.Exit(128 + exc.signum) from None


SHARED: tuple[tuple[str, Any, Any], ...] = (
    ("out", Path, typer.Option(..., "-o", "--out", help="Tune folder (tune.json, best/, tune.html, runs).")),
    ("rounds", int, typer.Option(5, "--rounds", help=H_ROUNDS)),
    ("iterations", int, typer.Option(3, "--iterations", help="Most iterations (trace, analyze, trial).")),
    ("budget_min", float, typer.Option(30.0, "--budget-min", help="Stop when the runs have taken this many minutes.")),
    ("confidence", float, typer.Option(0.99, "--confidence", help=H_CONF)),
    ("check", str, typer.Option(None, "--check", help=H_CHECK)),
    ("time_regex", str, typer.Option(None, "--time-regex", help=H_TIME)),
    ("time_unit", str, typer.Option("s", "--time-unit", help="Unit of --time-regex's number: s, ms, us or ns.")),
)
"""The options `tune charm` and `tune torch` share, (name, type, typer option), in --help order; then
the command's own, then SHARED_LAST."""
SHARED_LAST: tuple[tuple[str, Any, Any], ...] = (
    ("timeout", float, typer.Option(None, "--timeout", help=H_TIMEOUT)),
    ("force", bool, typer.Option(False, "--force", help="Start over in a folder that holds another tune.")),
    ("as_json", bool, typer.Option(False, "--json", help="Print tune.json instead of the table.")),
)


def _command(runtime: str, head: tuple[tuple[str, Any, Any], ...], own: tuple[tuple[str, Any, Any], ...],
             doc: str) -> Any:
    """The `tune RUNTIME` command: `head` (the program, its arguments, the process count), SHARED,
    `own` options, SHARED_LAST; it runs the tune (run(), resumable on a signal) and prints its table
    or tune.json."""
    program, app_args, procs = (name for name, _, _ in head)

    def command(**kw: Any) -> None:
        as_json, args = kw.pop("as_json"), (kw.pop(program), list(kw.pop(app_args) or []), kw.pop(procs))
        data = _guard(lambda: run(runtime, *args, **{"kinds": None, **kw}))
        _finish(data, kw["out"], as_json)

    command.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind)
        for name, kind, default in (*head, *SHARED, *own, *SHARED_LAST)])
    command.__annotations__ = {}  # typer reads the types from the signature
    command.__name__, command.__doc__ = f"{runtime}_cmd", doc
    return command


charm_cmd = app.command("charm", context_settings=CONTEXT)(_command("charm", (
    ("program", Path, typer.Argument(..., help="The charm4py program (APP.py).")),
    ("app_args", list[str], typer.Argument(None, help="Arguments passed to the program.")),
    ("pes", int, typer.Option(2, "--pes", "-p", help="Number of PEs (charmrun +pN)."))), (
    ("kinds", str, typer.Option(None, "--kinds", help="Comma-separated kinds to try (mapping, comm); default all.")),),
    "Tune a charm4py program: options go before APP.py; the rest is the program's."))
torch_cmd = app.command("torch", context_settings=CONTEXT)(_command("torch", (
    ("script", Path, typer.Argument(..., help="The DDP training script.")),
    ("app_args", list[str], typer.Argument(None, help="Arguments passed to the script.")),
    ("nproc", int, typer.Option(2, "--nproc", help="Ranks (torchrun --nproc-per-node)."))), (),
    "Tune a PyTorch DDP script under torchrun (the DDP bucket size; checkpoint policy as information)."))
