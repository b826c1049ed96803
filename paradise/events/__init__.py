"""The event layer: results that need every exec and send row (message edges, object loads per
step, the object communication graph, the exec graph and its critical path), computed once per
run on the engine and shared by the analyses above it."""
