"""Option types in `--help` as people read them: a flag shows no type (it takes no value), other
options their metavar or a word for their type (N, NUMBER, TEXT, PATH, choices as a|b), and
arguments their name in capitals (`paradise analyze [OPTIONS] TRACE`).


typer 0.29 prints `<bool>` beside every flag and `{trace}` in usage lines; readable() replaces the
three methods of its parameter classes that produce those strings (and the argument name column), once, when the CLI is built.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperArgument, TyperOption

_WORDS = {"int": "N", "float": "NUMBER", "str": "TEXT", "path": "PATH", "file": "FILE", "directory": "DIR",
          "Path": "PATH", "bool": "BOOLEAN"}
"""typer's type labels and the metavar shown for them."""


def _word(label: str) -> str:
    """typer's `<int range>` / `<list[Path]>` / `<duckdb|dask>` as N / PATH... / duckdb|dask."""
    label = label.strip("<>").removesuffix(" range")
    many = re.fullmatch(r"list\[(.+)\]", label)
    inner = many.group(1) if many else label
    word = "|".join(_WORDS.get(part, part) for part in inner.split("|"))
    return word + ("..." if many else "")


def _option_type(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag or self.count:
        return None
    if self.metavar is not None:
        return self.metavar
    return _word(self.display_type(ctx)) + ("..." if self.nargs != 1 else "")


def _argument_type(self: TyperArgument, ctx: Any) -> str | None:
    word = _word(self.display_type(ctx))
    return None if word.rstrip(".") == self.display_name_raw.upper() else word


def _argument_name(self: TyperArgument) -> str:
    return self.display_name_raw.upper() + ("..." if self.metavar is None and self.nargs != 1 else "")


def _argument_usage(self: TyperArgument) -> str:
    name = self.display_name_raw.upper()
    name = name if self.required else f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


def readable() -> None:
    """Installs the readable type strings on typer's parameter classes (idempotent)."""
    TyperOption.display_type_rich = _option_type  # type: ignore[method-assign]
    TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign]
    TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]
    TyperArgument._rich_display_name = _argument_name  # type: ignore[method-assign]
