-- export_chrome_lanes: the processes and threads of the Chrome export, for its name records
-- (process_name per PE, thread_name per lane); lanes as in export_chrome_events.sql (the macro
-- lane of events_lane.sql).
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
        lane(kind, stream, tid) AS lane
    FROM events
    WHERE kind NOT IN ('idle', 'create', 'migrate', 'recv')
)
GROUP BY pe, lane, stream
ORDER BY pe, lane
