"""An API key never lands in any file: store, response cache, Prefect home (DB, logs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows import hr_benchmark

CANARY = "sk-hr-canary-7f3a9c1e5b2d4068a1"
ITEMS = [{"id": f"q{i}", "document": "The bridge was designed by Helen Marsh.",
          "question": "Who designed the bridge?", "label": "Helen Marsh"} for i in range(4)]


def _files_with(folder: Path, secret: bytes) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file():
            try:
                if secret in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue
    return hits


def test_an_llm_arm_key_is_used_but_written_nowhere(
    prefect_harness: None, openai_server: object, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HR_SECRET_TEST_KEY", CANARY)
    arm = {"model": "openai-compatible:tiny", "base_url": openai_server.url,  # type: ignore[attr-defined]
           "api_key_env": "HR_SECRET_TEST_KEY", "price_in": 0.5, "price_out": 1.5,
           "prompt": "Context: {document}\nQuestion: {question}"}
    bench = hr_benchmark({"llm": arm}, ITEMS, runs=2, store=str(tmp_path / "results"),
                         name="secrets")
    assert bench.runs["correct"].all()
    requests = openai_server.requests  # type: ignore[attr-defined]
    assert requests and all(r.headers.get("authorization") == f"Bearer {CANARY}"
                            for r in requests)
    written = [tmp_path, Path(os.environ["PREFECT_HOME"])]
    assert (Path(bench.run_dir) / "responses.sqlite").is_file()
    assert sum(1 for folder in written for p in folder.rglob("*") if p.is_file()) > 5
    hits = [hit for folder in written for hit in _files_with(folder, CANARY.encode())]
    assert hits == []
