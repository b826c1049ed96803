-- events_exec_part_sends: a range step's send rows (paradise.events.rangerows, handed to the engine
-- as the Arrow table range_sends) with the bucket each goes to, in the partition files' columns.
-- reads: range_sends (events_exec_sends with src_id and send_offset_ns in place of coll, obj)
-- grain: one row per send row of the range.
-- columns:
--   msg, src_pe, send_t0, bytes (the send row)
--   src_id, send_offset_ns (as in scheduling_exec_graph, for this send row)
--   bucket      (hash(msg) mod $buckets, as in events_exec_part_execs)
-- params: $buckets (the bucket count)
-- merge: client
SELECT msg, src_pe, send_t0, bytes, src_id, send_offset_ns, CAST(hash(msg) % $buckets AS INTEGER) AS bucket
FROM range_sends
