"""Bootstrap: `python -P -m paradise.boot.charm APP.py [ARGS...]`, one per PE under charmrun.

Installs the tracer's hooks (PARADISE_TRACE=DIR) and the hint consumers (PARADISE_HINTS=DIR: mapping.json, comm.json)
before the program's `charm.start()`, then runs the unmodified program as `__main__` with
runpy, so its chare classes, pickling and `sys.argv` behave as if it had been run directly.
`-P` and tracers.program keep the current folder's modules out; the PE ends with charmrun.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tracers import job
from tracers.program import run_program


def install(trace_dir: str | None, hints_dir: str | None, program: str) -> None:
    """Hooks charm4py on this process; must run before the program calls charm.start().

    The combiner goes below the tracer (installed first), so the trace records every message the
    program sent and marks the ones that travelled in a batch."""
    from charm4py import chare, charm, entry_method

    from tracers.charm import _state, creation

    st = _state.ST
    st.program = program
    st.hints_dir = hints_dir
    if hints_dir:
        from hints.runtime.charm_combine import CombineConsumer

        combiner = CombineConsumer(Path(hints_dir) / "comm.json", program, traced=bool(trace_dir))
        combiner.install(charm, chare)
    if trace_dir:
        from tracers.charm import dispatch, hooks, lifecycle
        st.tracing = True
        st.trace_dir = trace_dir
        lifecycle.install_lifecycle(charm, program)
        hooks.install_exec_hooks(entry_method)
        hooks.install_send_hooks(charm)
        hooks.install_multicast_hook(charm)
        dispatch.install_dispatch_hooks(charm)
        hooks.install_migration_hook(charm)
        hooks.install_greenlet_trace()
        hooks.install_atsync(chare)
        hooks.install_step_api()
    creation.install_creation_hooks(chare, charm)
    if hints_dir:
        from hints.runtime.charm_map import MappingConsumer

        st.mapper = MappingConsumer(Path(hints_dir) / "mapping.json", program)
        st.mapper.register(charm)
        combiner.register()


def main(argv: list[str] | None = None) -> None:
    job.die_with_parent()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m paradise.boot.charm APP.py [ARGS...]", file=sys.stderr)
        sys.exit(2)
    app = Path(args[0])
    if not app.is_file():
        print(f"paradise: error: {app}: no such program", file=sys.stderr)
        sys.exit(2)
    trace_dir = os.environ.get("PARADISE_TRACE") or None
    hints_dir = os.environ.get("PARADISE_HINTS") or None
    if trace_dir or hints_dir:
        install(trace_dir, hints_dir, app.stem)
    run_program(str(app), args[1:])


if __name__ == "__main__":
    main()
