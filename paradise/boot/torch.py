"""Bootstrap: `python -m paradise.boot.torch SCRIPT [ARGS...]`, one per rank under torchrun.

Installs the hint consumers (PARADISE_HINTS=DIR: comm.json's DDP bucket size) and then hands over
to the torch tracer's bootstrap, which traces the script when PARADISE_TRACE is set and otherwise
just runs it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m paradise.boot.torch SCRIPT [ARGS...]")
    hints_dir = os.environ.get("PARADISE_HINTS")
    if hints_dir:
        from hints.runtime.ddp import install

        program = os.environ.get("PARADISE_TRACE_PROGRAM") or Path(sys.argv[1]).stem
        install(hints_dir, program)
    from tracers.torch.run import main as run_main

    run_main()


if __name__ == "__main__":
    main()
