"""`paradise tune` refuses bad input in one line with exit 2 before any run, and never writes over
a folder it did not write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "examples" / "stencil2d.py"


@pytest.mark.parametrize(("runtime", "opts", "why"), [
    ("charm", ["--rounds", "1"], "--rounds: 1 is out of range (2..100)"),
    ("charm", ["--rounds", "4", "--confidence", "0.95", "--check", "("], "--check '(': not a regular expression"),
    ("charm", ["--time-regex", "elapsed_s=[0-9.]+"], "needs a group around the number"),
    ("charm", ["--kinds", "mapping,schedule"], "--kinds 'mapping,schedule': choose from mapping, comm, ddp"),
    ("charm", ["--pes", "0"], "--pes: 0 is out of range"),
    ("charm", ["--budget-min", "nan"], "--budget-min: nan is out of range"),
    ("charm", ["--time-unit", "h"], "--time-unit 'h': one of s, ms, us, ns"),
    ("torch", ["--rounds", "101"], "--rounds: 101 is out of range (2..100)"),  # torch takes the shared options
    ("torch", ["--iterations", "0"], "--iterations: 0 is out of range (1..20)"),
    ("torch", ["--confidence", "1"], "--confidence: 1 is out of range"),
    ("torch", ["--time-unit", "h"], "--time-unit 'h': one of s, ms, us, ns"),
    ("torch", ["--nproc", "0"], "--nproc: 0 is out of range"),
])
def test_bad_options_are_one_line(cli, tmp_path, runtime, opts, why):
    rc, out, err = cli("tune", runtime, "-o", tmp_path / "t", *opts, APP)
    assert rc == 2 and err.count("\n") == 1 and why in err, err
    assert not (tmp_path / "t").exists()


def test_charm_and_torch_describe_their_shared_options_alike():
    from typer.main import get_command

    from paradise.cli.tune import app

    group = get_command(app)
    helps = [{name: (o.help, o.default) for o in group.commands[c].params for name in o.opts if name.startswith("--")}
             for c in ("charm", "torch")]
    shared = helps[0].keys() & helps[1].keys()
    assert shared >= {"--out", "--rounds", "--iterations", "--budget-min", "--confidence", "--check", "--time-regex",
                      "--time-unit", "--timeout", "--force", "--json"}
    assert all(helps[0][k] == helps[1][k] for k in shared)
    assert helps[0].keys() - shared == {"--pes", "--kinds"} and helps[1].keys() - shared == {"--nproc"}


def test_a_folder_it_did_not_write_is_refused(cli, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "notes.txt").write_text("mine")
    rc, _, err = cli("tune", "charm", "-o", tmp_path / "t", "--force", APP)
    assert rc == 2 and "holds files a tune did not write (notes.txt)" in err
    assert (tmp_path / "t" / "notes.txt").read_text() == "mine"


def test_another_tunes_folder_needs_force(cli, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "tune.json").write_text(json.dumps({"command": {"runtime": "charm", "program": "other.py"}}))
    rc, _, err = cli("tune", "charm", "-o", tmp_path / "t", APP)
    assert rc == 2 and "holds a tune of another command (differs in args, confidence, procs, program, rounds, time_unit)" in err and "pass --force to start over" in err


def test_missing_program(cli, tmp_path):
    rc, _, err = cli("tune", "torch", "-o", tmp_path / "t", tmp_path / "nope.py")
    assert rc == 2 and "nope.py: no such program" in err and not (tmp_path / "t").exists()
