"""Item 3: names from traces, hint files and outputs files are shown as text.

Every string a trace carries can hold ANSI escapes or rich markup. The commands must succeed,
print no escape byte, and show markup literally.
"""

from __future__ import annotations

from pathlib import Path

from tests.builders import TraceBuilder, torch_like
from tests.hostile import make
from tests.hostile.case import case

HOSTILE = {
    "csi": "\x1b[31mred\x1b[0m",
    "osc-title": "\x1b]0;pwned\x07x",
    "osc-link": "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "link-markup": "[link=http://evil.example]click[/link]",
    "close-tag": "ok[/b]x",
    "bold-markup": "[bold red]loud[/]",
    "bell-bs": "a\x07b\x08c\rd",
    "newline": "two\nlines",
    "c1-csi": "x\x9b31my",
    "long-csi": "\x1b[" + "1;" * 40 + "31m" + "n" * 80,
}
FULL_REPORT = ("csi", "link-markup", "close-tag", "osc-link")
"""Strings run through the whole analyze report (about a second each); all go through info,
compare and whatif."""
VISIBLE = {"link-markup": "[link=http://evil.example]", "close-tag": "ok[/b]x", "bold-markup": "[bold red]loud[/]"}


def _charm(text: str):
    def build(d: Path) -> None:
        b = TraceBuilder(2, program=text)
        for pe in (0, 1):
            for i in range(3):
                b.exec(pe, i * 1000, i * 1000 + 900, text, coll=f"C{text}#0", obj=pe * 3 + i, index=f"[{pe * 3 + i}]",
                       step=i)
            b.step(pe, 0, 0, 3000)
        b.message(0, 950, 1, 3000, 3500, text, 64, src=(f"C{text}#0", 0), dst=(f"C{text}#0", 3), step=0)
        b.write(d / "t")
        make.charm_trace(d, "good")

    return build


def _torch(text: str):
    def build(d: Path) -> None:
        b = torch_like(2, 3, program=text)
        for _pe, rows in b.rows.items():
            for r in rows:
                if r.get("name"):
                    r["name"] = text + r["name"]
                if r.get("group"):
                    r["group"] = text
        b.write(d / "t")

    return build


def _outputs(text: str):
    def build(d: Path) -> None:
        items = [text + "a", text + "b", text + "c"]
        make.outputs(d, "o1", items=items)
        make.outputs(d, "o2", items=items, logprobs=[[-2.5, -0.1], [-1.9, -0.2], [-0.3, -1.4]])

    return build


for key, text in HOSTILE.items():
    vis = (VISIBLE[key],) if key in VISIBLE else ()
    setup = _charm(text)
    case(f"inject-{key}-info", "info", "t", setup=setup, rc=(0,), stdout_has=vis, item="3")
    if key in FULL_REPORT:
        case(f"inject-{key}-analyze", "analyze", "t", setup=setup, rc=(0,), stdout_has=vis, item="3")
    case(f"inject-{key}-compare", "compare", "good", "t", setup=setup, rc=(0,), item="3")
    if key in FULL_REPORT:
        case(f"inject-{key}-torch-analyze", "analyze", "t", setup=_torch(text), rc=(0,), stdout_has=vis, item="3")
    case(f"inject-{key}-outputs-compare", "compare", "o1", "o2", setup=_outputs(text), rc=(0,), item="3")
    case(f"inject-{key}-whatif", "whatif", "t", "--hints", "h",
         setup=lambda d, s=setup, t=text: (s(d), make.hints_dir(d, files={"mapping.json": make.mapping_doc(
             program=t, collections={f"C{t}#0": {"[0]": 1, "[3]": 0}})})) and None,
         rc=(0,), item="3")
# a hostile file name is named in a refusal: shown, not interpreted
for key in ("csi", "link-markup", "close-tag"):
    name = HOSTILE[key].replace("/", "_") + ".parquet"
    case(f"inject-{key}-filename-refusal", "info", name, setup=lambda d, n=name: (d / n).write_text("x"), item="3")
