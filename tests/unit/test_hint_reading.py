"""Damaged and hostile hint files: the charm mapping consumer falls back to the default map with
one line (never aborting or hanging the traced run), and `paradise whatif` refuses them with one
line and exit 2. Each case is built here from its description (issue 15, item 9)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from hints.format import make_hint, provenance, write_hint
from hints.runtime.charm_map import MappingConsumer
from paradise.cli.main import main as paradise_main
from paradise.store import open_trace
from tests.unit import charm_synth as cs

pytestmark = pytest.mark.timeout(60)  # a FIFO read without O_NONBLOCK would hang here


def _doc(kind: str, program: str, **payload) -> dict:
    prov = provenance(trace_fingerprint="", program=program, pes=2, source="test")
    return make_hint(kind, payload, provenance=prov, justified_by=[])


def _mapping(program: str, **payload) -> str:
    payload.setdefault("collections", {"Cell#0": {"[0,0]": 1}})
    return json.dumps(_doc("mapping", program, **payload))


MAPPING_CASES = {
    "index_1e400": lambda prog: _mapping(prog, collections={"Cell#0": {"[1e400,1]": 1}}),
    "index_float": lambda prog: _mapping(prog, collections={"Cell#0": {"[0.5,1]": 1}}),
    "index_text": lambda prog: _mapping(prog, collections={"Cell#0": {"abc": 1}}),
    "pes_1e5000": lambda prog: _mapping(prog).replace('"format"', '"pes": 1e5000, "format"', 1),
    "pes_3": lambda prog: _mapping(prog, pes=3),
    "pe_huge_int": lambda prog: _mapping(prog).replace('"[0,0]": 1', '"[0,0]": ' + "9" * 5000),
    "deep": lambda prog: "[" * 100_000 + "]" * 100_000,
    "provenance_list": lambda prog: _mapping(prog).replace('"provenance": {', '"provenance": [{', 1)
    .replace('}, "justified_by"', '}], "justified_by"', 1),
    "not_utf8": lambda prog: b"\xff\xfe{}",
    "folder": None, "dev_zero": None, "fifo": None,
}  # fmt: skip


def _plant(d, case: str, program: str):
    """Writes hints dir d's mapping.json as the case says; returns its path."""
    d.mkdir(exist_ok=True)
    path = d / "mapping.json"
    if case == "folder":
        path.mkdir()
    elif case == "dev_zero":
        path.symlink_to("/dev/zero")
    elif case == "fifo":
        os.mkfifo(path)
    else:
        data = MAPPING_CASES[case](program)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize("case", sorted(MAPPING_CASES))
def test_mapping_consumer_falls_back_with_one_line(tmp_path, capsys, case):
    path = _plant(tmp_path / "h", case, "prog")
    consumer = MappingConsumer(path, "prog")
    consumer._load(2)  # what PE 0 does when the program creates its first array
    assert consumer.table is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"paradise: mapping.json refused: {path}: "), err
    assert err[0].endswith("; using the default map")


def test_a_sound_mapping_is_still_read(tmp_path, capsys):
    path = tmp_path / "mapping.json"
    path.write_text(_mapping("prog", collections={"Cell#0": {"[0,0]": 1, "[0,1]": 0}}))
    consumer = MappingConsumer(path, "prog")
    consumer._load(2)
    assert consumer.table == {"Cell#0": {(0, 0): 1, (0, 1): 0}} and capsys.readouterr().err == ""


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    prog, pl = cs.grid2d(2, 2, 2, 2)
    return open_trace(prog.write(tmp_path_factory.mktemp("t") / "grid", pl))


def _whatif(monkeypatch, capsys, *args) -> tuple[int, list[str]]:
    monkeypatch.setattr(sys, "argv", ["paradise", "whatif", *map(str, args)])
    with pytest.raises(SystemExit) as info:
        paradise_main()
    return info.value.code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("case", sorted(MAPPING_CASES))
def test_whatif_refuses_damaged_mapping(tmp_path, monkeypatch, capsys, trace, case):
    path = _plant(tmp_path / "h", case, trace.program)
    rc, err = _whatif(monkeypatch, capsys, trace.path, "--hints", tmp_path / "h")
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"paradise: error: {path}: "), err


@pytest.mark.parametrize("prio", ["1e30", str(10**30), "-2147483649", "true", '"1"'])
def test_whatif_refuses_out_of_range_priorities(tmp_path, monkeypatch, capsys, trace, prio):
    doc = _doc("schedule", trace.program, priorities=[{"coll": "", "entry": "work", "prio": 0}], default_prio=0)
    path = write_hint(tmp_path / "h", doc)
    path.write_text(path.read_text().replace('"prio": 0', f'"prio": {prio}'))
    rc, err = _whatif(monkeypatch, capsys, trace.path, "--hints", tmp_path / "h")
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"paradise: error: {path}: "), err


def test_whatif_refuses_a_mapping_for_another_pe_count(tmp_path, monkeypatch, capsys, trace):
    """docs/hints.md: the payload's `pes` is checked like provenance.pes."""
    path = tmp_path / "h" / "mapping.json"
    _plant(tmp_path / "h", "pes_3", trace.program)
    rc, err = _whatif(monkeypatch, capsys, trace.path, "--hints", tmp_path / "h")
    assert rc == 2 and err == [f"paradise: error: {path}: made for 3 PEs, this run has 2"]
