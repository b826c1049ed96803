-- export_chrome_events: the trace as Chrome Trace Event Format records (the JSON that Perfetto
-- UI and chrome://tracing open), one JSON object per row, streamed by `paradise export chrome`.
-- grain: one row per output record: a complete event ("X") per running interval of an execution
-- (the `running` view, events_running.sql: an execution that never suspended as one slice, one
-- that suspended as one slice per piece, args.kind "piece" with its execution's start in
-- args.exec_t0; so the slices of a PE sum to its running time) and per step, phase, collective,
-- checkpoint and restore row; an instant ("i") per failure, restart and mark row; a flow
-- start ("s") per send row with a msg and per CPU launch (cat cuda_runtime / cuda_driver) with a
-- msg; a flow end ("f", binding to the enclosing slice: the execution's first piece) per other
-- exec row with a msg; two idle counter samples ("C", 1 at the start, 0 at the end) per idle row.
-- Times: ts and dur in microseconds as decimal numbers (ns / 1000, exact below 2^53 ns).
-- pid is the PE / rank; tid is the row's lane (the macro lane of events_lane.sql: the row's
-- thread, its device stream, or a lane of steps and phases, collectives, checkpoints and restores).
-- columns:
--   line  string  one JSON object followed by ",\n" (rows concatenate into the traceEvents array)
-- merge: client (an export streams every row once; it is not split by files)
-- Two scans: `running` for the execution slices, `events` for every other record; each events
-- row yields its records as a list, unnested (no CTE read several times, which DuckDB would
-- materialise; the result streams with the scan).
SELECT unnest(list_filter([
    CASE WHEN kind IN ('step', 'phase', 'collective', 'checkpoint', 'restore') AND t1 IS NOT NULL THEN
        '{"ph":"X","name":' || to_json(coalesce(name, '')) || ',"cat":' || to_json(coalesce(cat, kind)) || ',' || ts
        || ',"dur":' || CAST((t1 - t0) / 1000 AS VARCHAR) || ',"pid":' || pe || ',"tid":' || lane
        || ',"args":' || json_object('kind', kind, 'coll', coll, 'index', index, 'step', step, 'bytes', bytes, 'msg', msg)
        || E'},\n' END,
    CASE WHEN kind IN ('failure', 'restart', 'mark') THEN
        '{"ph":"i","s":"p","name":' || to_json(coalesce(name, kind)) || ',"cat":' || to_json(kind) || ',' || ts
        || ',"pid":' || pe || ',"tid":' || lane || E'},\n' END,
    CASE WHEN msg IS NOT NULL AND (kind = 'send' OR (kind = 'exec' AND cat IN ('cuda_runtime', 'cuda_driver'))) THEN
        '{"ph":"s","id":' || msg || ',"name":"msg","cat":' || (CASE WHEN kind = 'send' THEN '"message"' ELSE '"launch"' END)
        || ',' || ts || ',"pid":' || pe || ',"tid":' || lane
        || ',"args":' || json_object('bytes', bytes, 'peer_pe', peer_pe) || E'},\n' END,
    CASE WHEN msg IS NOT NULL AND kind = 'exec' AND coalesce(cat, '') NOT IN ('cuda_runtime', 'cuda_driver') THEN
        '{"ph":"f","bp":"e","id":' || msg || ',"name":"msg","cat":'
        || (CASE WHEN cat = 'kernel' OR lane >= 1000000000 THEN '"launch"' ELSE '"message"' END)
        || ',' || ts || ',"pid":' || pe || ',"tid":' || lane || E'},\n' END,
    CASE WHEN kind = 'idle' AND t1 IS NOT NULL THEN
        '{"ph":"C","name":"idle",' || ts || ',"pid":' || pe || E',"args":{"idle":1}},\n' END,
    CASE WHEN kind = 'idle' AND t1 IS NOT NULL THEN
        '{"ph":"C","name":"idle","ts":' || CAST(t1 / 1000 AS VARCHAR) || ',"pid":' || pe || E',"args":{"idle":0}},\n' END
], lambda x: x IS NOT NULL)) AS line
FROM (
    SELECT
        kind, pe, t0, t1, name, cat, coll, index, step, bytes, msg, peer_pe,
        lane(kind, stream, tid) AS lane,
        '"ts":' || CAST(t0 / 1000 AS VARCHAR) AS ts
    FROM events
    WHERE kind IN ('exec', 'step', 'phase', 'collective', 'checkpoint', 'restore', 'failure', 'restart', 'mark',
                   'send', 'idle')
)
UNION ALL
SELECT '{"ph":"X","name":' || to_json(coalesce(name, '')) || ',"cat":' || to_json(coalesce(cat, 'exec'))
       || ',"ts":' || CAST(t0 / 1000 AS VARCHAR) || ',"dur":' || CAST((t1 - t0) / 1000 AS VARCHAR) || ',"pid":' || pe
       || ',"tid":' || lane(kind, stream, tid)
       || ',"args":' || (CASE WHEN kind = 'piece'
                              THEN json_object('kind', kind, 'exec_t0', exec_t0, 'coll', coll, 'index', index,
                                               'step', step, 'msg', msg)
                              ELSE json_object('kind', kind, 'coll', coll, 'index', index, 'step', step, 'msg', msg)
                         END)
       || E'},\n' AS line
FROM running
WHERE kind IN ('exec', 'piece')
