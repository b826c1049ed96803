"""The `paradise` command loads only what the command being run needs (fast --help, lean imports)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "duckdb", "networkx", "pyarrow", "numpy", "rich", "torch", "dask", "pymetis", "msgspec")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_cli_module_imports_no_heavy_library():
    loaded = _modules_after(
        "import sys\nimport paradise.cli.main\nprint(' '.join(m.split('.')[0] for m in sys.modules))"
    )
    assert not loaded & set(HEAVY)


def _kineto_import_modules(real_data, call: str) -> set[str]:
    """Top-level modules loaded after `call` imports sampled_rank-0 (named `f` in its scope)."""
    f = real_data / "hta" / "tests" / "data" / "trace_filter" / "sampled_rank-0.json.gz"
    return _modules_after(f"import sys\nf = {str(f)!r}\n{call}\nprint(' '.join(m.split('.')[0] for m in sys.modules))\n")


def test_kineto_import_loads_no_pandas_duckdb_or_rich(real_data, tmp_path):
    loaded = _kineto_import_modules(
        real_data,
        "from paradise.cli.main import app\n"
        f"app(['import', 'kineto', f, '-o', {str(tmp_path / 'k.parquet')!r}], standalone_mode=False)",
    )
    assert {"pyarrow", "msgspec"} <= loaded
    assert not loaded & {"pandas", "duckdb", "networkx", "rich", "torch", "dask"}


def test_kineto_api_loads_no_pandas(real_data, tmp_path):
    # pa.array()/to_numpy() would import pandas (~50 MB, ~1 s); the importer avoids them.
    loaded = _kineto_import_modules(
        real_data,
        f"from paradise.importers.kineto import import_trace\nimport_trace([f], {str(tmp_path / 'p.parquet')!r})",
    )
    assert "pandas" not in loaded


def test_first_report_loads_no_pandas_or_networkx(tmp_path):
    # `paradise analyze --only overview` is the quick look at a large trace: pyarrow converts to
    # numpy and pandas by importing pandas, so the overview's roll-ups must avoid both.
    from builders import charm_like

    trace = charm_like(pes=2, steps=2).write(tmp_path / "t")
    code = (
        "import contextlib, io, sys\n"
        "from paradise.cli.main import app\n"
        "with contextlib.redirect_stdout(io.StringIO()) as report:\n"
        f"    app(['analyze', '--json', '--only', 'overview', {str(trace)!r}], standalone_mode=False)\n"
        "assert '\"busy_share\"' in report.getvalue()\n"
        "print(' '.join(m.split('.')[0] for m in sys.modules))\n"
    )
    loaded = _modules_after(code)
    assert "duckdb" in loaded and not loaded & {"pandas", "networkx", "torch", "dask"}


def test_help_lists_every_command(cli):
    code, out, _ = cli("--help")
    assert code == 0
    for command in ("info", "analyze", "report", "merge", "whatif", "compare", "policy", "demo", "import", "trace", "tune",
                    "export"):
        assert command in out
    code, out, _ = cli("import", "kineto", "--help")
    assert code == 0
    for option in ("--out", "--rank", "--program", "--force", "one per rank"):
        assert option in out


def test_nsys_import_loads_no_pandas_duckdb_rich_or_pyarrow_compute(real_data, tmp_path):
    # start-up is most of a small export's import: pandas (Array.to_numpy), pyarrow.compute (Array.cast,
    # Table.take) and the analysis libraries stay unloaded, from the CLI and from the API.
    f = real_data / "pipit" / "pipit" / "tests" / "data" / "cloverleaf-nsys" / "perlmutter-cloverleaf-cuda.sqlite"
    for call in (f"from paradise.cli.main import app\napp(['import', 'nsys', {str(f)!r}, '-o', "
                 f"{str(tmp_path / 'c.parquet')!r}], standalone_mode=False)",
                 f"from paradise.importers.nsys import import_trace\nimport_trace([{str(f)!r}], "
                 f"{str(tmp_path / 'a.parquet')!r})"):
        loaded = _modules_after(f"import sys\n{call}\nprint(' '.join(sys.modules))\n")
        assert {"pyarrow.parquet", "adbc_driver_sqlite"} <= loaded
        assert not loaded & {"pandas", "pyarrow.compute", "duckdb", "networkx", "rich", "torch", "dask"}
    assert (tmp_path / "c.parquet").is_file() and (tmp_path / "a.parquet").is_file()
