-- export_chrome_lanes: the processes and threads of the Chrome export, for its name records
-- (process_name per PE, thread_name per lane); lanes as in export_chrome_events.sql.
-- grain: one row per pe × lane
-- columns:
--   pe      int32  PE or rank (the Chrome pid)
--   lane    int64  the Chrome tid
--   stream  int32  device stream of the lane, null for CPU lanes
--   rows    int64  rows on the lane
-- merge: keys(pe, lane, stream) sum(rows)
SELECT pe, lane, stream, count(*) AS rows
FROM (
    SELECT
        pe,
        stream,
        CASE
            WHEN kind IN ('step', 'phase') THEN 2000000001
            WHEN kind = 'collective' THEN 2000000002
            WHEN kind IN ('checkpoint', 'restore') THEN 2000000003
            WHEN stream IS NOT NULL THEN 1000000000 + (CAST(stream AS BIGINT) % 1000000000 + 1000000000) % 1000000000
            WHEN tid IS NULL THEN 0
            WHEN tid BETWEEN 0 AND 999999999 THEN tid
            ELSE 3000000000 + (tid % 1000000000 + 1000000000) % 1000000000  -- 64-bit thread handles
        END AS lane
    FROM events
    WHERE kind NOT IN ('idle', 'create', 'migrate', 'recv')
)
GROUP BY pe, lane, stream
ORDER BY pe, lane
