"""The run record: a run folder's typed files (its manifest, its stored reference)."""
