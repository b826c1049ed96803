"""Stage-1 SQL, one statement per file (<name>.sql), loaded by name by the engines
(paradise.engines.load_sql). Each header states the grain, the columns and the merge rule."""
