"""`paradise demo`: a short `paradise tune` of an example program, the whole loop shown once.

Tunes examples/stencil2d.py on 2 PEs by default (a heavy region makes the default mapping
imbalanced; `--example particles`: many small messages, combined per comm.json) with a small
budget: few rounds, two iterations at most. The tune prints each step, the prediction and the
measurement of every hinted run, and the summary; the folder holds tune.json, best/ and tune.html.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import typer

from paradise.errors import InvalidOption

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_ARGS = {"stencil2d": "--grid 8 8 --block 512 --iters 40 --check-blocks 2",
             "particles": "--particles 2000 --steps 8 --check"}
"""Default arguments per example. 512x512 blocks: per message, charm4py's runtime costs about
as much as relaxing a 256x256 block once, so smaller blocks make the run as much messaging as
compute, which no mapping removes; at 512 compute dominates and balancing it shows."""
MEASURE = {"stencil2d": ("max_err=\\S+", "elapsed_s=([0-9.]+)"),
           "particles": ("particles=\\d+|out_of_order=\\d+|check=\\w+", "wall_s=([0-9.]+)")}
"""(--check, --time-regex) per example: the result lines a hinted run must reproduce, and the
program's own measured region."""
DEMO_TUNE = {"rounds": 4, "confidence": 0.95, "iterations": 2, "budget_min": 5.0}
"""A small budget: 4 paired rounds (3 degrees of freedom for the t-test), at 95 % confidence."""


def example_program(example: str) -> Path:
    """The program examples/<example>.py; a name with a path in it, or none there, is refused."""
    known = sorted(p.stem for p in EXAMPLES.glob("*.py")) if EXAMPLES.is_dir() else []
    if not re.fullmatch(r"[A-Za-z0-9_]+", example) or example not in known:
        choices = f"choose from {', '.join(known)}" if known else "the demo runs from a source checkout"
        raise InvalidOption(f"--example {example!r}: not an example under examples/ ({choices})")
    return EXAMPLES / f"{example}.py"


def example_arguments(text: str) -> list[str]:
    """--args split as a shell would; unbalanced quotes are one line naming the option."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise InvalidOption(f"--args {text!r}: {exc}") from None


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        out: Path = typer.Option(Path("paradise-demo"), "--out", "-o", metavar="DIR",
                                 help="Tune folder (rewritten by each demo run)."),
        pes: int = typer.Option(2, "--pes", help="PEs for every run."),
        example: str = typer.Option("stencil2d", "--example", metavar="NAME", help="Example program under examples/."),
        example_args: str | None = typer.Option(None, "--args", metavar="ARGS", show_default=False,
                                                help="Arguments for the example, as one string "
                                                     f"(stencil2d: {DEMO_ARGS['stencil2d']!r}; "
                                                     f"particles: {DEMO_ARGS['particles']!r})."),
        as_json: bool = typer.Option(False, "--json", help="Print tune.json instead of the table."),
    ) -> None:
        """A short `paradise tune` of an example: trace, analyze, hints, timed rounds, what was kept."""
        from paradise.cli import tune

        app_path = example_program(example)
        args = example_arguments(example_args if example_args is not None else DEMO_ARGS.get(example, ""))
        check, time_regex = MEASURE.get(example, (None, None))
        argv = [
            "paradise", "tune", "charm", "--pes", str(pes), "-o", str(out), "--force",
            *(x for k, v in DEMO_TUNE.items() for x in (f"--{k.replace('_', '-')}", str(v))),
            *(["--check", check] if check else []), *(["--time-regex", time_regex] if time_regex else []),
            str(app_path.relative_to(EXAMPLES.parent)), *args]
        if not as_json:  # the command it stands for, on stdout: stderr holds only a refusal's one line
            typer.secho("$ " + " ".join(shlex.quote(a) for a in argv), fg="cyan")
        data = tune._guard(lambda: tune.run("charm", app_path, args, pes, out, check=check, time_regex=time_regex,
                                            time_unit="s", kinds=None, force=True, argv=argv,
                                            **DEMO_TUNE))
        if as_json:
            typer.echo(json.dumps(data, indent=1, sort_keys=True, default=float))
        else:
            tune._finish(data, out, False)
        sys.stdout.flush()
