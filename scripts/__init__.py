"""The template repository's own commands: the demo, the documentation build hook, the
profiling guide's example."""
