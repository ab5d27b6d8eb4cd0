"""What the hr tests rely on, checked on the wire with the plain ``openai`` SDK.

When one of these fails, the server or the model changed, not hr.
"""

from __future__ import annotations

import json

import openai
from llama_server import MODEL_NAME, LlamaServer

# the tests' prompt (real_support.llm_arm): without "Answer in a few words." the model
# goes on past 48 tokens (finish_reason "length")
QUESTION = [{"role": "user", "content": "Answer in a few words. What is the capital of France?"}]


def _client(llama: LlamaServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=llama.base_url, api_key="unused", max_retries=0,
                         timeout=60)


def test_a_reply_has_usage_and_finish_reason(llama: LlamaServer) -> None:
    with _client(llama) as client:
        reply = client.chat.completions.create(model=MODEL_NAME, messages=QUESTION,
                                               temperature=0, seed=42, max_tokens=48)
        cut = client.chat.completions.create(model=MODEL_NAME, messages=QUESTION,
                                             temperature=0, seed=42, max_tokens=3)
    assert reply.choices[0].finish_reason == "stop"
    assert "Paris" in (reply.choices[0].message.content or "")
    assert reply.usage is not None and reply.usage.prompt_tokens > 0
    assert 0 < reply.usage.completion_tokens < 48
    assert cut.choices[0].finish_reason == "length"
    assert cut.usage is not None and cut.usage.completion_tokens == 3
    assert cut.choices[0].message.content  # a truncated reply still has its text


def test_response_format_json_schema_constrains_the_reply(llama: LlamaServer) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 40}},
              "required": ["answer"], "additionalProperties": False}
    with _client(llama) as client:
        reply = client.chat.completions.create(
            model=MODEL_NAME, messages=QUESTION, temperature=0, seed=42,
            max_tokens=64, response_format={
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema, "strict": True}})
    parsed = json.loads(reply.choices[0].message.content or "")
    assert set(parsed) == {"answer"} and isinstance(parsed["answer"], str)


def test_the_same_request_gives_the_same_reply(llama: LlamaServer) -> None:
    with _client(llama) as client:
        texts = {client.chat.completions.create(
            model=MODEL_NAME, messages=QUESTION, temperature=0, seed=42,
            max_tokens=24).choices[0].message.content for _ in range(2)}
    assert len(texts) == 1
