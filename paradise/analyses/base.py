"""Shared result types for analyses: characteristics with evidence and confidence."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Evidence:
    """One number behind a claim: what was measured, its value and unit, the threshold it met."""

    metric: str
    value: Any
    unit: str = ""
    threshold: Any = None
    query: str = ""


@dataclass(frozen=True)
class Characteristic:
    """One classified property of a run (e.g. placement / load_imbalance = 1.8)."""

    category: str  # placement | communication | scheduling | training | resilience | overview
    name: str
    value: Any
    evidence: tuple[Evidence, ...] = ()
    confidence: float = 1.0
    summary: str = ""  # one sentence a user understands

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = [asdict(e) for e in self.evidence]
        return d


@dataclass(frozen=True)
class AnalysisConfig:
    """Options that reach analyses from the CLI; each analysis reads what it needs."""

    mtbf_hours: float | None = None
    gpus: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class AnalysisResult:
    """What every analysis returns: characteristics, extra tables/sections, and hint documents."""

    name: str
    characteristics: list[Characteristic] = field(default_factory=list)
    sections: dict[str, Any] = field(default_factory=dict)  # JSON-safe extras (tables as lists of dicts)
    hints: list[dict[str, Any]] = field(default_factory=list)  # hint payloads (hints.format.make_hint docs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "characteristics": [c.to_dict() for c in self.characteristics],
            **self.sections,
        }


def provenance_of(trace: Any) -> dict[str, Any]:
    """Hint provenance from the trace handle."""
    from hints.format import provenance

    return provenance(trace_fingerprint=trace.fingerprint, program=trace.program,
                      pes=trace.metadata.get("pes"), source=trace.source)


def fmt_s(ns: float | None) -> str:
    """A duration for sentences ("?" when unknown), as paradise.units formats every time."""
    from paradise.units import duration

    return "?" if ns is None else duration(ns)


def justification(c: Characteristic) -> dict[str, Any]:
    """A characteristic as a hint's `justified_by` entry."""
    return {"analysis": c.category, "characteristic": c.name, "value": c.value,
            "evidence": [{"metric": e.metric, "value": e.value, "unit": e.unit} for e in c.evidence]}


def json_scalar(v: Any) -> Any:
    """A JSON-safe Python scalar: numpy ints/floats unwrapped, NaN/NA -> None, floats rounded."""
    if v is None or (type(v).__name__ == "NAType" and type(v).__module__.startswith("pandas")):
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        return None if not math.isfinite(v) else round(v, 6)
    return v

