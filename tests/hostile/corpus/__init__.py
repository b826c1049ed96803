"""The hostile-input corpus: importing this package registers every case (tests.hostile.case)."""

from tests.hostile.corpus import (  # noqa: F401
    fuzzed,
    hints,
    importers,
    inject,
    launch,
    options,
    outputs,
    surface,
    traces,
)
