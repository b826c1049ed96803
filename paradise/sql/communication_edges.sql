-- communication_edges: messages between objects, each message's send matched to the execs it caused
-- (on `msg`), grouped by object pair and entry method; one msg-hash bucket of the exec graph's
-- partitions at a time (paradise.events.partitions: the bucket join gives the deliveries).
-- Run once per `paradise analyze` with the exec graph and shared by placement and communication.
-- grain: one row per src_coll x src_obj x src_pe x dst_coll x dst_obj x dst_pe x entry (x dst_cat).
-- columns:
--   src_coll, src_obj, src_index  (sending object; null when sent from outside any object)
--   src_pe                        (PE of the send row)
--   dst_coll, dst_obj, dst_index  (receiving object: the exec the message caused, else the send's peer_*)
--   dst_pe                        (PE of the receiving exec, else the send's peer_pe)
--   entry                         (entry method executed on receipt, else the send's name)
--   dst_cat                       (category of the receiving exec: 'runtime' for runtime machinery
--                                  such as the message combiner's `deliver`; null without an exec)
--   msgs                          (count of deliveries; a broadcast counts once per receiver)
--   bytes                         (bytes, sum of payload sizes over deliveries)
--   min_bytes, max_bytes          (bytes, smallest and largest payload)
--   bcast_msgs                    (count of deliveries whose message reached more than one exec)
-- reads: bucket_deliveries (paradise.events.bucketjoin.DELIVERY_COLUMNS): one row per exec of a
--        message with a send, and one per message with a send and no exec; a message's send is its
--        earliest send row (the lowest PE on a tie) with the largest payload of its rows. A message's
--        rows all lie in one bucket, so its fan-out (bcast) is exact there.
-- The definition as one query over the whole trace, the test oracle: tests/oracles/sql/communication_edges.sql.
-- merge: group by the key columns; sum(msgs, bytes, bcast_msgs) min(min_bytes) max(max_bytes)
SELECT src_coll, src_obj, src_index, src_pe,
       coalesce(x_coll, peer_coll) AS dst_coll, coalesce(x_obj, peer_obj) AS dst_obj,
       x_index AS dst_index, coalesce(x_pe, peer_pe) AS dst_pe,
       coalesce(x_name, send_name) AS entry,
       x_cat AS dst_cat,
       count(*) AS msgs,
       CAST(sum(coalesce(bytes, 0)) AS BIGINT) AS bytes,
       min(bytes) AS min_bytes,
       max(bytes) AS max_bytes,
       count(*) FILTER (WHERE bcast) AS bcast_msgs
FROM bucket_deliveries
GROUP BY ALL
