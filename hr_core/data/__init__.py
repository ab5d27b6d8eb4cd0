"""Reference sets and the files they come from (JSONL, CSV, Parquet, SQuAD JSON, YAML).
May import ``hr_core.core``.
"""
