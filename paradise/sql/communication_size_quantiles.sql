-- communication_size_quantiles: exact quantiles of message size over the trace's send rows.
-- grain: one row for the whole trace.
-- columns:
--   msgs          (count of send rows)
--   sized_msgs    (count of send rows whose payload size is known, bytes NOT NULL)
--   p50_bytes, p90_bytes, p99_bytes  (bytes: quantile_disc over the known sizes, so each is the
--                 size of a message that was sent, never a bucket edge; NULL without sized rows)
--   min_bytes, max_bytes  (bytes)
--   small_msgs    (count of sized send rows of at most $small_bytes bytes)
-- params: $small_bytes (the comm hint's small-message bound)
-- merge: client (exact quantiles cannot be merged from partial aggregates: they need all files of a
--   trace at once; the Dask engine runs this in its event tables over every file, where DuckDB
--   sorts only the one bytes column)
SELECT count(*) AS msgs,
       count(bytes) AS sized_msgs,
       quantile_disc(bytes, 0.5) AS p50_bytes,
       quantile_disc(bytes, 0.9) AS p90_bytes,
       quantile_disc(bytes, 0.99) AS p99_bytes,
       min(bytes) AS min_bytes,
       max(bytes) AS max_bytes,
       count(*) FILTER (WHERE bytes <= $small_bytes) AS small_msgs
FROM events
WHERE kind = 'send'
