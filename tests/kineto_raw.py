"""Plain-Python readings of the real Kineto traces (HTA test data), exact to the nanosecond: the
oracle the GPU tests compare paradise's figures with."""

from __future__ import annotations

import functools
import gzip
import json
from decimal import ROUND_HALF_UP, Decimal

HTA = ("hta", "tests", "data")
NCCL = "nccl_parser_config/nccl_data.json.gz"
AMD = "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
NS = "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
WORK = {"kernel", "gpu_memcpy", "gpu_memset"}


@functools.cache
def _raw(real_data, rel):
    with gzip.open(real_data.joinpath(*HTA, rel), "rb") as fh:
        return json.load(fh, parse_float=Decimal)["traceEvents"]


def _ns(us) -> int:
    return int((Decimal(us) * 1000).to_integral_value(ROUND_HALF_UP))


def _intervals(events, keep):
    return [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))) for e in events if e.get("ph") == "X" and keep(e)]




def _clip(iv, w0, w1):
    return [(max(a, w0), min(b, w1)) for a, b in iv if a < w1 and b > w0]
