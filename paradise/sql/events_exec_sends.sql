-- events_exec_sends: every send row with a message of the PEs $lo..$hi, for a range step of the
-- exec graph (paradise.events.partitions), where paradise.events.rangerows finds each one's
-- sending exec among the range's execs (a send and its sending exec share a PE).
-- reads: events
-- grain: one row per send event with a message, on a PE in $lo..$hi, in any order. A message with
--        several send rows keeps them all here; its bucket step takes the earliest.
-- columns:
--   msg            (message id)
--   src_pe, send_t0, bytes (PE, time and payload of this send row)
--   coll, obj, index (the sending object)
--   peer_pe, peer_coll, peer_obj, name (the destination and entry the send names: the message
--                  edges' receiver where no exec of the message is in the trace)
-- params: $lo, $hi (the range of PEs, inclusive)
-- merge: client
SELECT msg, pe AS src_pe, t0 AS send_t0, bytes, coll, obj, index, peer_pe, peer_coll, peer_obj, name
FROM events WHERE kind = 'send' AND msg IS NOT NULL AND pe BETWEEN $lo AND $hi
