"""Critical path, waiting for messages and the schedule hint on synthetic runs."""

from __future__ import annotations

from hints.format import load_hint, write_hint
from hints.generators import schedule as schedule_gen
from paradise.analyses import scheduling
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from tests.unit import charm_synth as cs


def run(tmp_path, prog_placement, name="t"):
    prog, pl = prog_placement
    trace = open_trace(prog.write(tmp_path / name, pl))
    with DuckDBEngine(trace) as eng:
        return trace, scheduling.analyze(Session(eng, trace))


def ev(c):
    return {e.metric: e.value for e in c.evidence}


def test_pipeline_critical_path_follows_messages(tmp_path):
    # 4 stages, stage s on PE s//2; 1 item: the path is the 4 stage execs joined by 3 messages,
    # one of which crosses PEs (stage 1 -> stage 2)
    _, r = run(tmp_path, cs.pipeline(4, 2, 1))
    cp = r.characteristics[0]
    assert cp.name == "critical_path"
    assert ev(cp)["execs"] == 4 and ev(cp)["message_hops"] == 3
    assert ev(cp)["length_ns"] == cp.value
    wait = next(c for c in r.characteristics if c.name == "idle_waiting_for_messages")
    assert ev(wait)["wait_ns"] > 0  # stage 2 on PE 1 waited for the cross-PE message


def test_critical_entries_and_schedule_hint(tmp_path):
    # ping-pong between PEs while PE 0 has 20 fillers queued: each ping waits behind fillers
    trace, r = run(tmp_path, cs.ping_filler(10, 20))
    crit = {(e["coll"], e["entry"]): e for e in r.sections["critical_entries"]}
    assert ("Ping#0", "ping") in crit and ("Fill#0", "fill") in crit
    assert crit[("Ping#0", "ping")]["queue_share"] > 0.9
    (doc,) = r.hints
    assert doc["kind"] == "schedule"
    assert doc["priorities"][0]["entry"] == "ping" and doc["priorities"][0]["prio"] < doc["default_prio"]
    assert all(p["entry"] != "fill" for p in doc["priorities"])
    g = doc["predicted_gain"]
    assert g["makespan_ns_after"] < g["makespan_ns_before"]
    back = load_hint(write_hint(tmp_path / "h", doc), "schedule", program=trace.program, pes=2)
    assert back["priorities"] == doc["priorities"]


def test_no_schedule_hint_when_priorities_do_not_help(tmp_path):
    _, r = run(tmp_path, cs.pipeline(4, 2, 3))
    assert r.hints == []


def test_priorities_generator():
    crit = [{"coll": "A#0", "entry": "x", "share": 0.6}, {"coll": "", "entry": "y", "share": 0.3},
            {"coll": "A#0", "entry": "z", "share": 0.01}]
    prios = schedule_gen.priorities(crit)
    assert [p["entry"] for p in prios] == ["x", "y"]
    assert prios[0]["prio"] < prios[1]["prio"] < 0
    assert schedule_gen.as_lookup(prios) == {"A#0.x": prios[0]["prio"], "y": prios[1]["prio"]}


def test_schedule_json_written_only_on_request(tmp_path, cli):
    """schedule.json has no runtime consumer in charm4py: `--hints-out` alone skips it with a note
    naming the what-if gain; `--advisory` writes it."""
    trace, r = run(tmp_path, cs.ping_filler(10, 20))
    assert [d["kind"] for d in r.hints] == ["schedule"]
    rc, _, err = cli("analyze", trace.path, "--hints-out", tmp_path / "h1", "--only", "scheduling")
    assert rc == 0, err
    assert not (tmp_path / "h1" / "schedule.json").exists()
    (note,) = [ln for ln in err.splitlines() if "schedule.json not written" in ln]
    assert "--advisory" in note and "what-if:" in note and "message priorities" in note
    rc, _, err = cli("analyze", trace.path, "--hints-out", tmp_path / "h2", "--only", "scheduling", "--advisory")
    assert rc == 0, err
    assert (tmp_path / "h2" / "schedule.json").exists()
