"""Object steps on an engine whose steps run in processes of their own (Dask), in object-hash
buckets, so that no process (the client least) holds every object's rows per step: split steps
(one per group of the trace's files) write events_object_step_parts by hash of (coll, index);
a bucket step merges its bucket's parts into events_object_steps' rows with object ids local to
the bucket and returns its objects; the client ranks the objects of all buckets in (coll, index)
order (one row per object), and a read step per bucket renumbers its rows with those global ids and
returns the small results objloads reads (summary, step load sum, step numbers, each object's median
and step count) and writes its step loads to a file, which later steps read one bucket at a time.

Layout of the partition directory (on a path every worker sees):
  parts/bucket=B/gI_0.parquet   group I's parts of bucket B (removed once the bucket is merged)
  parts.parquet                 no rows: the schema, for a bucket without files
  steps/bB.parquet              bucket B's object steps (events_object_steps, bucket-local oids)
  loads/bB.parquet              bucket B's step loads (events_object_step_loads, global oids)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paradise.engines import load_sql
from paradise.events import partitions, steploads

PARTS_QUERY, STEPS_QUERY = "events_object_step_parts", "events_object_steps"
TABLE, PARTS = "object_steps", "object_step_parts"
"""The relations events_object_steps and its readers name."""
SPLIT, PART_FILES = "object_step_split", "bucket_part_files"
"""The relations events_object_bucket_split and events_object_bucket_parts read."""
PART_ROW_BYTES = 32
"""Memory a bucket step needs per trace row of its bucket (the parts' aggregate; a part row stands
for several execs, each one of several rows)."""


@dataclass(frozen=True)
class BucketResult:
    """What a read step returns: its bucket's share of what objloads reads."""

    objects: pa.Table
    step_load: int
    steps: np.ndarray
    loads: str
    """The file of the bucket's events_object_step_loads rows."""
    rows: pa.Table | None
    medians: pa.Table
    """The bucket's events_object_step_medians rows (global oids)."""


def split_step(con: Any, root: str, i: int, buckets: int) -> None:
    """Split step I: the step's files' object-step parts, by bucket of (coll, index), under `root`."""
    rows = f"WITH {SPLIT} AS ({load_sql(PARTS_QUERY)}) {load_sql('events_object_bucket_split')}"
    partitions.copy_by_bucket(con, rows, root, "parts", f"g{int(i)}", schema_file=i == 0,
                              params={"buckets": int(buckets)})


def _steps_file(root: str, b: int) -> str:
    return os.path.join(root, "steps", f"b{int(b)}.parquet")


def merge_step(con: Any, root: str, b: int) -> pa.Table:
    """Bucket step B: the bucket's parts merged (events_object_step_parts' merge rule) into
    events_object_steps (oids local to the bucket), kept as steps/bB.parquet before the parts are
    removed; returns the bucket's objects (local, coll, index). A step run again returns them from
    that file."""
    out = _steps_file(root, b)
    if not os.path.exists(out):
        files = partitions.bucket_files(root, "parts", b)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {PART_FILES} AS SELECT * "
                    f"FROM read_parquet({partitions._files(files)}, hive_partitioning = false)")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {PARTS} AS {load_sql('events_object_bucket_parts')}")
        try:
            os.makedirs(os.path.dirname(out), exist_ok=True)
            con.execute(f"COPY ({load_sql(STEPS_QUERY)}) TO {partitions.quoted(out + '.tmp')} ({partitions.PARQUET})")
        finally:
            con.execute(f"DROP VIEW IF EXISTS {PARTS}; DROP VIEW IF EXISTS {PART_FILES}")
        os.replace(out + ".tmp", out)
        for f in files[:-1]:
            os.remove(f)
    return con.sql(load_sql("events_object_bucket_objects"), params={"file": out}).to_arrow_table()


def read_step(con: Any, root: str, b: int, gid: np.ndarray, with_rows: bool) -> BucketResult:
    """Read step B: the bucket's object steps with global oids (gid[local oid]) as the table
    TABLE, and objloads' readers over it (the step rows only `with_rows`, or when the bucket has a
    tie)."""
    con.register("gid", pa.table({"local": np.arange(len(gid), dtype=np.int64), "oid": gid.astype(np.int64)}))
    con.execute(f"CREATE OR REPLACE TEMP TABLE {TABLE} AS {load_sql('events_object_bucket_steps')}",
                {"file": _steps_file(root, b)})
    con.unregister("gid")
    objects = con.sql(load_sql("events_object_summary")).to_arrow_table()
    step_load = int(con.sql(load_sql("events_object_bucket_load")).to_arrow_table().column("step_load")[0].as_py())
    steps = con.sql(load_sql("events_object_step_numbers")).to_arrow_table().column("step").to_numpy()
    loads = os.path.join(root, "loads", f"b{int(b)}.parquet")
    os.makedirs(os.path.dirname(loads), exist_ok=True)
    con.execute(f"COPY ({load_sql('events_object_step_loads')}) TO {partitions.quoted(loads)} ({partitions.PARQUET})")
    rows = None
    if with_rows or (len(objects) and pc.max(objects.column("latest_rows")).as_py() > 1):
        rows = con.sql(load_sql("events_object_step_rows")).to_arrow_table()
    medians = con.sql(load_sql("events_object_step_medians")).to_arrow_table()
    return BucketResult(objects=objects, step_load=step_load, steps=steps.astype(np.int64),
                        loads=loads, rows=rows, medians=medians)


def bucket_matrix(loads: str, oids: np.ndarray | None = None, steps: np.ndarray | None = None,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A bucket's step loads (its loads file) as (oids, matrix): a row per object of `oids` (None:
    every object of the file, ascending), a column per step of `steps` (None: the file's)."""
    t = pq.read_table(loads, columns=["oid", "step", "load_ns"], use_threads=False)
    oid = t.column("oid").to_numpy()
    if oids is not None:
        keep = np.isin(oid, oids)
        t, oid = t.filter(pa.array(keep)), oid[keep]
    oids = np.unique(oid) if oids is None else np.intersect1d(oids, oid)
    steps = np.unique(t.column("step").to_numpy()) if steps is None else steps
    row_of = np.zeros(int(oids[-1]) + 1 if len(oids) else 0, np.int64)
    row_of[oids] = np.arange(len(oids))
    matrix = np.full((len(oids), len(steps)), np.nan)
    return oids, steploads.fill(matrix, steps, t.to_batches(), row_of)


def app_steps_step(con: Any, loads: str, oids: np.ndarray) -> np.ndarray:
    """The steps in which any of `oids` has a load in the bucket (BucketLoads.windows' columns)."""
    t = pq.read_table(loads, columns=["oid", "step"], use_threads=False)
    return np.unique(t.column("step").to_numpy()[np.isin(t.column("oid").to_numpy(), oids)])


def window_step(con: Any, loads: str, oids: np.ndarray, med: np.ndarray, steps: np.ndarray, clip: float,
                windows: int) -> tuple[np.ndarray, np.ndarray]:
    """The bucket's rows of steploads.windowed over the columns `steps`: (its objects among `oids`,
    their rows); `med`: the medians of `oids`."""
    mine, matrix = bucket_matrix(loads, oids, steps)
    return mine, steploads.windowed(matrix, med[np.searchsorted(oids, mine)], clip, windows)


@dataclass(frozen=True)
class BucketLoads:
    """The step loads of a Dask run: the buckets' loads files, read by steps on the workers."""

    engine: Any
    files: tuple[str, ...]

    def matrix(self, objects: int, steps: np.ndarray) -> np.ndarray:
        """The whole object x step matrix, on the client (tests and small traces)."""
        matrix = np.full((objects, len(steps)), np.nan)
        for f in self.files:
            oids, part = bucket_matrix(f, None, steps)
            matrix[oids] = part
        return matrix

    def windows(self, oids: np.ndarray, med: np.ndarray, clip: float, windows: int,
                steps: np.ndarray | None = None) -> np.ndarray:
        """steploads.windowed of `oids` (ascending) over the steps any of them ran in: `steps` when
        known (one of them ran in every step: ObjectSteps.ran), else first read from every bucket;
        then each bucket's rows over them. The client holds rows of windows."""
        none: list[list[str]] = [[] for _ in self.files]
        if steps is None:
            steps = np.unique(np.concatenate([np.empty(0, np.int64)] + self.engine.run_steps(
                app_steps_step, [{"loads": f, "oids": oids} for f in self.files], files=none)))
        parts = self.engine.run_steps(window_step, [{"loads": f, "oids": oids, "med": med, "steps": steps, "clip": clip,
                                                     "windows": windows} for f in self.files], files=none)
        got = np.concatenate([p[0] for p in parts])
        rows = np.concatenate([p[1] for p in parts])[np.argsort(got, kind="stable")]
        if not np.array_equal(np.sort(got), oids):
            raise ValueError("object steps: the buckets' objects differ from those asked for")
        return rows


def bucketed(engine: Any) -> tuple[list[BucketResult], pd.DataFrame]:
    """Every bucket's read step result, and the objects in oid order (events_object_summary)."""
    from paradise.engines.merge import query_tables

    root, buckets = partitions.split_files(engine, split_step, PART_ROW_BYTES, "objsteps-")
    none: list[list[str]] = [[] for _ in range(buckets)]
    objs = engine.run_steps(merge_step, [{"root": root, "b": b} for b in range(buckets)], files=none)
    every = pa.concat_tables([t.append_column("bucket", pa.array(np.full(len(t), b, np.int32)))
                              for b, t in enumerate(objs)])
    ranked = query_tables({"bucket_objects": every}, load_sql("events_object_ranks"))
    bucket, local, oid = (ranked.column(c).to_numpy() for c in ("bucket", "local", "oid"))
    gids = []
    for b, t in enumerate(objs):
        gid = np.empty(len(t), np.int64)
        keep = bucket == b
        gid[local[keep]] = oid[keep]
        gids.append(gid)
    del objs, every, ranked, bucket, local, oid
    items = [{"root": root, "b": b, "gid": gids[b], "with_rows": False} for b in range(buckets)]
    parts = engine.run_steps(read_step, items, files=none)
    objects = pa.concat_tables([p.objects for p in parts]).sort_by("oid").to_pandas()
    if len(objects) and int(objects["latest_rows"].max()) > 1:  # a tie somewhere: every bucket's rows
        redo = [b for b, p in enumerate(parts) if p.rows is None]
        again = engine.run_steps(read_step, [{**items[b], "with_rows": True} for b in redo], files=[[] for _ in redo])
        for b, p in zip(redo, again):
            parts[b] = p
    return parts, objects
