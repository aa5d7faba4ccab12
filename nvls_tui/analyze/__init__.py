"""`analyze`: one captured text (a paste, a file) recognised, parsed and diagnosed."""
