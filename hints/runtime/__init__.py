"""Runtime consumers of hint files: they run inside the user's program and import only hints.format."""
