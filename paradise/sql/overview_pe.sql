-- overview_pe: every aggregate of the overview in one scan, per PE and kind, split further by the
-- columns the other sections roll up on (stage 2 sums these rows into per-PE time, entries, the
-- communication matrix and collectives; one scan instead of one per section).
-- grain: one row per kind × pe × name × coll × cat × peer_pe × size_log2; peer_pe and size_log2
-- are kept on send rows only
-- (null on others: an exec's peer_pe, its sender, would multiply the entry rows by the senders).
-- A few hundred rows on a Charm run (PEs × entry methods, plus the PE pairs that talk); a Kineto
-- rank adds a row per distinct op name.
-- columns:
--   kind        string       row kind (exec, idle, send, collective, ...)
--   pe          int32        PE (Charm) or global rank (PyTorch)
--   name        string       entry method / op / kernel / collective name (send: target entry)
--   coll        string       object collection (chare array, process group), null if none
--   cat         string       source category (Kineto cat, Charm chare kind), null if none
--   peer_pe     int32        receiving PE of a send row (null when unknown); null on other kinds
--   size_log2   int32        send rows: floor(log2(max(bytes, 1))), the power-of-two size bucket
--                            that the communication analysis rolls up from this table (its
--                            size histogram); null on other kinds
--   rows        int64 count  rows
--   t_first     int64 ns     earliest t0
--   t_last      int64 ns     latest end (t1, or t0 for instants)
--   dur_ns      int64 ns     sum of the row time: coalesce(active, t1 - t0) on exec rows (null
--                            when no row has one), coalesce(t1, t0) - t0 on others (instants 0)
--   max_ns      int64 ns     largest single row time, as in dur_ns
--   bytes       int64 bytes  sum of bytes (null when no row has bytes)
--   min_bytes, max_bytes  int64 bytes  smallest and largest bytes (null when no row has bytes)
-- merge: keys(kind, pe, name, coll, cat, peer_pe, size_log2) sum(rows, dur_ns, bytes) min(t_first, min_bytes) max(t_last, max_ns, max_bytes)
-- Rows come sorted by the keys, nulls first (as the Dask engine's merge returns them).
-- Speed: one hash aggregate over the scan; each grouping column costs every row a hash and a
-- compare, so a send row's (peer_pe, size_log2) are grouped as one BIGINT, send_key =
-- peer_pe * 256 + 128 + size_log2 (peer_pe known) or size_log2 (unknown), null on other kinds
-- (size_log2 is 0..63), and split again on the grouped rows (torch 10^7 rows: 0.61-0.62 CPU s
-- against 0.66-0.68 grouped apart; docs/benchmarks.md run 30). A CASE on the string keys
-- (nulling name / coll / cat on send rows) costs more than the few extra send rows it saves.
SELECT
    kind,
    pe,
    name,
    coll,
    cat,
    CASE WHEN send_low >= 128 THEN ((send_key - send_low) // 256)::INTEGER END AS peer_pe,
    (send_low % 128)::INTEGER AS size_log2,
    rows, t_first, t_last, dur_ns, max_ns, bytes, min_bytes, max_bytes
FROM (
    SELECT *, ((send_key % 256) + 256) % 256 AS send_low  -- the low byte, also of a negative key
    FROM (
        SELECT
            kind,
            pe,
            name,
            coll,
            cat,
            CASE WHEN kind = 'send' THEN
                coalesce(peer_pe::BIGINT * 256 + 128, 0)
                + CAST(floor(log2(greatest(coalesce(bytes, 0), 1))) AS BIGINT) END AS send_key,
            count(*) AS rows,
            min(t0) AS t_first,
            max(coalesce(t1, t0)) AS t_last,
            sum(CASE WHEN kind = 'exec' THEN coalesce(active, t1 - t0) ELSE coalesce(t1, t0) - t0 END)::BIGINT AS dur_ns,
            max(CASE WHEN kind = 'exec' THEN coalesce(active, t1 - t0) ELSE coalesce(t1, t0) - t0 END) AS max_ns,
            sum(bytes)::BIGINT AS bytes,
            min(bytes) AS min_bytes,
            max(bytes) AS max_bytes
        FROM events
        GROUP BY kind, pe, name, coll, cat, send_key
    )
)
ORDER BY kind NULLS FIRST, pe NULLS FIRST, name NULLS FIRST, coll NULLS FIRST, cat NULLS FIRST, peer_pe NULLS FIRST,
         size_log2 NULLS FIRST
