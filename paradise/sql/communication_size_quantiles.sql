-- communication_size_quantiles: exact quantiles of message size over the trace's send rows.
-- grain: one row for the whole trace.
-- columns:
--   msgs          (count of send rows)
--   sized_msgs    (count of send rows whose payload size is known, bytes NOT NULL)
--   p50_bytes, p90_bytes, p99_bytes  (bytes: the same value as quantile_disc over the known sizes,
--                 the size of a message that was sent, never a bucket edge; NULL without sized rows)
--   min_bytes, max_bytes  (bytes)
--   small_msgs    (count of sized send rows of at most $small_bytes bytes)
-- params: $small_bytes (the comm hint's small-message bound)
-- method: a count per distinct size (a hash aggregate, which DuckDB spills under its memory limit;
--   quantile_disc keeps every row in memory and cannot), then the smallest size whose running count
--   reaches ceil(q * sized_msgs), which is quantile_disc's pick (tests/unit/test_size_quantiles.py).
-- merge: client (the per-size counts of several files would merge by sum; the Dask engine runs this
--   in its event tables over every file)
WITH sizes AS (  -- the one pass over the send rows; unknown sizes are the NULL group
    SELECT bytes, count(*) AS n FROM events WHERE kind = 'send' GROUP BY bytes
), running AS (
    SELECT bytes, sum(n) OVER (ORDER BY bytes) AS upto, sum(n) OVER () AS total
    FROM sizes WHERE bytes IS NOT NULL
), picks AS (
    SELECT min(bytes) FILTER (WHERE upto >= ceil(0.5 * total)) AS p50_bytes,
           min(bytes) FILTER (WHERE upto >= ceil(0.9 * total)) AS p90_bytes,
           min(bytes) FILTER (WHERE upto >= ceil(0.99 * total)) AS p99_bytes
    FROM running
), counts AS (
    SELECT coalesce(sum(n), 0)::BIGINT AS msgs,
           coalesce(sum(n) FILTER (WHERE bytes IS NOT NULL), 0)::BIGINT AS sized_msgs,
           min(bytes) AS min_bytes, max(bytes) AS max_bytes,
           coalesce(sum(n) FILTER (WHERE bytes <= $small_bytes), 0)::BIGINT AS small_msgs
    FROM sizes
)
SELECT c.msgs, c.sized_msgs, p.p50_bytes, p.p90_bytes, p.p99_bytes, c.min_bytes, c.max_bytes, c.small_msgs
FROM counts AS c CROSS JOIN picks AS p
