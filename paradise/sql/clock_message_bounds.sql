-- clock_message_bounds: what the messages between two PEs say about their clocks' offsets, after
-- the ping-based correction (paradise.store.clockrefine turns the bounds into a shift per PE).
-- input: view clock_rows(kind, pe, msg, t0): the trace's send and exec rows with a msg, t0 corrected
--   by the ping offsets (paradise.store.clock), made by the store.
-- grain: one row per (sender PE, receiver PE) pair with at least one message sent on one and
--   executed on the other (send.msg = exec.msg).
-- columns:
--   src_pe     int32     PE of the send
--   dst_pe     int32     PE of the exec
--   messages   int64     send -> exec pairs between them
--   lead_ns    int64 ns  max(send.t0 - exec.t0): the receiver's clock must move at least this much
--                        later than the sender's for every exec to start after its send
--   backward   int64     pairs whose exec starts before its send (exec.t0 < send.t0)
-- merge: keys(src_pe, dst_pe) sum(messages, backward) max(lead_ns)
SELECT s.pe AS src_pe, e.pe AS dst_pe, count(*) AS messages, max(s.t0 - e.t0) AS lead_ns,
       count(*) FILTER (WHERE e.t0 < s.t0) AS backward
FROM (SELECT pe, msg, t0 FROM clock_rows WHERE kind = 'send') s
JOIN (SELECT pe, msg, t0 FROM clock_rows WHERE kind = 'exec') e ON e.msg = s.msg AND e.pe <> s.pe
GROUP BY s.pe, e.pe
ORDER BY s.pe, e.pe
