-- events_latency_kept: the moments of the message cost fit's kept deliveries in one bucket of the
-- exec graph: cross-PE deliveries to an idle receiver (events_latency_samples' `cross`) with a
-- delay of at most $limit (the run's 90th percentile; +inf for all).
-- reads: graph_part (one bucket of the exec graph: a reader step of paradise.events.graphread)
-- params: $limit (ns)
-- grain: one row per bucket; merged (paradise.events.graphread, Chan's pairwise update of the
--        moments): the run's least-squares line of delay on bytes.
-- columns:
--   kept_n                 (count of kept deliveries)
--   min_bytes, max_bytes   (bytes, smallest and largest payload among them)
--   mean_bytes, mean_delay (bytes and ns, their means; null without one)
--   m2_bytes               (sum of squared deviations of bytes from mean_bytes)
--   c_delay_bytes          (sum of products of the deviations of delay and bytes)
-- merge: client (the moments merge pairwise, not by sum)
WITH k AS (
    SELECT (t0 - send_t0)::DOUBLE AS delay, coalesce(bytes, 0)::DOUBLE AS nbytes
    FROM graph_part
    WHERE src_id IS NOT NULL AND send_t0 >= 0 AND t0 - send_t0 >= 0 AND src_pe <> pe
          AND coalesce(pe_prev_end, -1) <= send_t0 AND (t0 - send_t0)::DOUBLE <= $limit
)
SELECT count(*) AS kept_n, min(nbytes) AS min_bytes, max(nbytes) AS max_bytes,
       avg(nbytes) AS mean_bytes, avg(delay) AS mean_delay,
       var_pop(nbytes) * count(*) AS m2_bytes, covar_pop(delay, nbytes) * count(*) AS c_delay_bytes
FROM k
