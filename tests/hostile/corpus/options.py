"""Item 10 and every command's options: out-of-range, non-finite, unknown and malformed values
are refused in one line naming the option (exit 2), before anything runs."""

from __future__ import annotations

from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case


def _trace(d: Path) -> None:
    make.charm_trace(d)


def _prog(d: Path) -> None:
    (d / "app.py").write_text("print('hi')\n")


# policy: huge finite values overflowed (8 cases in the issue), plus the other bad numbers
POLICY = ("--iteration-s", "--checkpoint-s", "--restart-s", "--gpus", "--mtbf-hours", "--jit-save-s",
          "--unrecoverable-fraction", "--job-hours")
GOOD = {"--iteration-s": "1", "--checkpoint-s": "10", "--restart-s": "60", "--gpus": "8"}
for opt in POLICY:
    for label, value in (("1e308", "1e308"), ("max", "1.7976931348623157e308"), ("nan", "nan"), ("inf", "inf"),
                         ("neg", "-1"), ("text", "abc"), ("hex", "0x10"), ("huge-int", "9" * 400)):
        args = dict(GOOD)
        args[opt] = value
        flat = [x for kv in args.items() for x in kv]
        rc = (2,)
        if label == "hex" and opt != "--gpus":
            rc = (2,)
        case(f"opt-policy{opt}-{label}", "policy", *flat, mention=opt, rc=rc, item="10")
case("opt-policy-json-1e300", "policy", "--iteration-s", "1e300", "--checkpoint-s", "1e300", "--restart-s", "1e300",
     "--gpus", "100000000", "--json", rc=(0, 2), item="10")
case("opt-policy-tiny", "policy", "--iteration-s", "1e-300", "--checkpoint-s", "1e-300", "--restart-s", "0",
     "--gpus", "1", rc=(0, 2), item="10")

# compare
case("opt-compare-engine-bogus", "compare", "t", "t", "--engine", "bogus", setup=_trace, mention="--engine", item="10")
case("opt-compare-engine-empty", "compare", "t", "t", "--engine", "", setup=_trace, mention="--engine", item="10")
case("opt-analyze-engine-bogus", "analyze", "t", "--engine", "bogus", setup=_trace, mention="--engine", item="10")
for label, lp in (("nan", [[float("nan"), -0.1], [-1.9, -0.2], [-0.3, -1.4]]),
                  ("inf", [[float("inf"), -0.1], [-1.9, -0.2], [-0.3, -1.4]]),
                  ("neg-inf-all", [[float("-inf"), float("-inf")], [-1.9, -0.2], [-0.3, -1.4]]),
                  ("positive", [[5.0, 3.0], [-1.9, -0.2], [-0.3, -1.4]])):
    def _setup(d: Path, lp=lp) -> None:
        make.outputs(d, "o1")
        make.outputs(d, "o2", logprobs=lp)

    case(f"opt-compare-logprobs-{label}-json", "compare", "o1", "o2", "--json", setup=_setup,
         rc=(2,) if label in ("nan", "inf") else (0, 2), mention="o2", item="10")
    case(f"opt-compare-logprobs-{label}", "compare", "o1", "o2", setup=_setup,
         rc=(2,) if label in ("nan", "inf") else (0, 2), mention="o2", item="10")
case("opt-compare-baseline-repeat-missing", "compare", "o1", "o1", "--baseline-repeat", "nope",
     setup=lambda d: make.outputs(d, "o1") and None, mention="nope", item="10")
case("opt-compare-self", "compare", "t", "t", setup=_trace, rc=(0,), item="10")

# trace charm / torch: values checked before anything is launched
for label, value in (("neg", "-1"), ("zero", "0"), ("nan", "nan"), ("inf", "inf"), ("text", "soon"),
                     ("1e308", "1e308")):
    case(f"opt-trace-charm-timeout-{label}", "trace", "charm", "--timeout", value, "-o", "t", "app.py",
         setup=_prog, mention="--timeout", item="10")
for label, value in (("zero", "0"), ("neg", "-2"), ("huge", str(2**31)), ("text", "two")):
    case(f"opt-trace-charm-pes-{label}", "trace", "charm", "--pes", value, "-o", "t", "app.py", setup=_prog,
         mention="--pes", item="10")
    case(f"opt-trace-torch-nproc-{label}", "trace", "torch", "--nproc", value, "-o", "t", "app.py", setup=_prog,
         mention="--nproc", item="10")
for label, value in (("neg", "-1"), ("huge", str(2**40)), ("text", "x")):
    case(f"opt-trace-torch-max-restarts-{label}", "trace", "torch", "--max-restarts", value, "-o", "t", "app.py",
         setup=_prog, mention="--max-restarts", item="10")
for cmd in ("charm", "torch"):
    case(f"opt-trace-{cmd}-missing-program", "trace", cmd, "-o", "t", "nope.py", mention="nope.py", item="10")
    case(f"opt-trace-{cmd}-program-is-dir", "trace", cmd, "-o", "t", "d", setup=lambda d: (d / "d").mkdir(),
         mention="d", item="10")
    case(f"opt-trace-{cmd}-hints-is-file", "trace", cmd, "--hints", "app.py", "-o", "t", "app.py", setup=_prog,
         mention="app.py", item="10")
    case(f"opt-trace-{cmd}-no-out", "trace", cmd, "app.py", setup=_prog, mention="--out", item="10")
    case(f"opt-trace-{cmd}-fifo-program", "trace", cmd, "-o", "t", "p.py", setup=lambda d: make.fifo(d / "p.py"),
         mention="p.py", item="10")

# demo
case("opt-demo-args-unbalanced-quote", "demo", "--args", '"--grid 4', mention="--args", item="10")
case("opt-demo-args-trailing-backslash", "demo", "--args", "--grid 4 \\", mention="--args", item="10")
for label, value in (("dotdot", "../.."), ("dotdot-file", "../../etc/passwd"), ("absolute", "/etc/passwd"),
                     ("slash", "a/b"), ("empty", ""), ("missing", "nosuchexample"), ("dot", "."),
                     ("nul", "a\x00b")):
    case(f"opt-demo-example-{label}", "demo", "--example", value, "--out", "d", mention="--example",
         item="10")
case("opt-demo-pes-zero", "demo", "--pes", "0", mention="--pes", item="10")

# analyze
for label, args, mention in (
    ("top-zero", ("--top", "0"), "--top"), ("top-neg", ("--top", "-3"), "--top"),
    ("top-huge", ("--top", str(2**70)), "--top"),
    ("only-bogus", ("--only", "bogus"), "--only"), ("only-empty", ("--only", ","), "--only"),
    ("mtbf-neg", ("--mtbf-hours", "-1"), "--mtbf-hours"), ("mtbf-nan", ("--mtbf-hours", "nan"), "--mtbf-hours"),
    ("mtbf-inf", ("--mtbf-hours", "inf"), "--mtbf-hours"), ("mtbf-zero", ("--mtbf-hours", "0"), "--mtbf-hours"),
    ("gpus-zero", ("--gpus", "0"), "--gpus"), ("gpus-huge", ("--gpus", str(2**70)), "--gpus"),
    ("scheduler-bogus", ("--scheduler", "not a url"), "--scheduler"),
    ("unknown-option", ("--frobnicate",), "--frobnicate"),
):
    case(f"opt-analyze-{label}", "analyze", "t", *args, setup=_trace, mention=mention, item="10")
case("opt-analyze-missing-trace", "analyze", "nope", mention="nope", item="10")
case("opt-analyze-no-args", "analyze", mention="trace", item="10")
case("opt-info-two-traces", "info", "t", "t", setup=_trace, mention="t", item="10")
case("opt-unknown-command", "frobnicate", mention="frobnicate", item="10")
case("opt-whatif-no-hints", "whatif", "t", setup=_trace, mention="--hints", item="10")
case("opt-whatif-hints-missing", "whatif", "t", "--hints", "nope", setup=_trace, mention="nope", item="10")
case("opt-whatif-hints-is-file", "whatif", "t", "--hints", "t/pe-00000.parquet", setup=_trace,
     mention="pe-00000.parquet", item="10")
case("opt-whatif-hints-empty-dir", "whatif", "t", "--hints", "e",
     setup=lambda d: (_trace(d), (d / "e").mkdir()) and None, mention="e", item="10")
case("opt-merge-no-out", "merge", "t", setup=_trace, mention="--out", item="10")
case("opt-kineto-rank-neg", "import", "kineto", "k.json", "-o", "k.parquet", "--rank", "-1",
     setup=lambda d: make.kineto_file(d, make.kineto_doc(None)) and None, mention="--rank", item="7")
case("opt-kineto-rank-huge", "import", "kineto", "k.json", "-o", "k.parquet", "--rank", str(2**31),
     setup=lambda d: make.kineto_file(d, make.kineto_doc(None)) and None, mention="--rank", item="7")
case("opt-kineto-rank-2p70", "import", "kineto", "k.json", "-o", "k.parquet", "--rank", str(2**70),
     setup=lambda d: make.kineto_file(d, make.kineto_doc(None)) and None, mention="--rank", item="7")
