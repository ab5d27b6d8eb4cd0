"""The questions, arms and the in-process ``hr`` command line of the real-model tests."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from llama_server import MODEL_NAME

from hr_cli import main

__all__ = ["ANSWER_SCHEMA", "QUESTIONS", "hr", "llm_arm", "write_reference"]

QUESTIONS = [
    {"id": "capital", "question": "What is the capital of France?", "label": ["Paris"]},
    {"id": "week", "question": "How many days are there in a week?", "label": ["7", "seven"]},
    {"id": "sky", "question": "What colour is the sky on a clear day?", "label": ["blue"]},
    {"id": "planet", "question": "What is the largest planet in the solar system?",
     "label": ["Jupiter"]},
    {"id": "water", "question": "What is the chemical formula of water?", "label": ["H2O"]},
]
"""Easy factual questions: SmolLM2-135M answers most of them (the issue measured 4 of 5)."""

ANSWER_SCHEMA = {"type": "object",
                 "properties": {"answer": {"type": "string", "maxLength": 40}},
                 "required": ["answer"], "additionalProperties": False}


def llm_arm(base_url: str, **params: Any) -> dict[str, Any]:
    """An LLM arm on the served model: temperature 0 and a fixed seed, plus ``params``.

    Its model spec has the limits a 135M model on a loaded 2-core machine needs:
    at most 2 calls in flight (the server's slots: a call queued behind others spends
    its timeout waiting) and 600 s per attempt (a call takes 1-60 s there).
    """
    return {"model": {"model": f"openai-compatible:{MODEL_NAME}", "base_url": base_url,
                      "timeout_s": 600, "concurrency": 2},
            "prompt": "Answer in a few words. {question}",
            "params": {"temperature": 0, "seed": 42, **params},
            "price_in": 0.1, "price_out": 0.4}


def write_reference(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reference.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in QUESTIONS))
    return path


def hr(*args: str | Path) -> tuple[int, str, str]:
    """Run ``hr ARGS`` in this process; returns (exit code, stdout, stderr)."""
    code = 0
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()
