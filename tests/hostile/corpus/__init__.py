"""The hostile-input corpus: importing this package registers every case (tests.hostile.case)."""

from tests.hostile.corpus import (  # noqa: F401
    fuzzed,
    hint_values,
    hints,
    importers,
    inject,
    launch,
    nsys,
    options,
    outputs,
    spools,
    surface,
    traces,
)
