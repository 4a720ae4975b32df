"""Small builders of Open Responses event streams for the event and stream-checker tests."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MAKE_STREAM = SHARED / "bench" / "make_stream.py"


def bench_stream(n: int) -> bytes:
    """The SSE capture `make_stream.py n` prints."""
    return subprocess.run(
        [sys.executable, str(MAKE_STREAM), str(n)], capture_output=True, check=True, timeout=120
    ).stdout


def response(status: str = "in_progress", output: list | None = None, **extra) -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1719900000,
        "completed_at": None,
        "status": status,
        "incomplete_details": None,
        "model": "m",
        "previous_response_id": None,
        "instructions": None,
        "output": output or [],
        "error": None,
        "tools": [],
        "tool_choice": "auto",
        "truncation": "disabled",
        "parallel_tool_calls": True,
        "text": {"format": {"type": "text"}},
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "temperature": 1.0,
        "reasoning": None,
        "usage": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "store": True,
        "background": False,
        "service_tier": "default",
        "metadata": {},
        "safety_identifier": None,
        "prompt_cache_key": None,
        **extra,
    }


class Stream:
    """Builds the events of one response; `sse()` renders them as a capture."""

    def __init__(self, *, queued: bool = False):
        self.events: list[dict] = []
        self.output: list[dict] = []
        self.add({"type": "response.created", "response": response("queued" if queued else "in_progress")})
        if queued:
            self.add({"type": "response.queued", "response": response("queued")})
        self.add({"type": "response.in_progress", "response": response()})

    def add(self, event: dict) -> dict:
        event["sequence_number"] = len(self.events)
        self.events.append(event)
        return event

    def message(self, *chunks: str, kind: str = "output_text", status: str = "completed", item_id: str | None = None):
        index = len(self.output)
        item_id = item_id or f"msg_{index}"
        field = "refusal" if kind == "refusal" else "text"
        self.add(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
            }
        )
        empty = {"type": kind, field: ""} | ({"annotations": [], "logprobs": []} if kind == "output_text" else {})
        self.add(
            {
                "type": "response.content_part.added",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "part": empty,
            }
        )
        delta_type = "response.refusal.delta" if kind == "refusal" else "response.output_text.delta"
        for chunk in chunks:
            self.add(
                {"type": delta_type, "item_id": item_id, "output_index": index, "content_index": 0, "delta": chunk}
                | ({"logprobs": []} if kind == "output_text" else {})
            )
        text = "".join(chunks)
        done_type = "response.refusal.done" if kind == "refusal" else "response.output_text.done"
        self.add(
            {"type": done_type, "item_id": item_id, "output_index": index, "content_index": 0, field: text}
            | ({"logprobs": []} if kind == "output_text" else {})
        )
        part = empty | {field: text}
        self.add(
            {
                "type": "response.content_part.done",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "part": part,
            }
        )
        item = {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": [part]}
        self.add({"type": "response.output_item.done", "output_index": index, "item": item})
        self.output.append(item)
        return self

    def function_calls(self, *calls: tuple[str, list[str]]):
        """Several calls streamed in parallel: all added, deltas interleaved, then all done."""
        opened = []
        for name, chunks in calls:
            index = len(self.output) + len(opened)
            fid = f"fc_{index}"
            self.add(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {
                        "id": fid,
                        "type": "function_call",
                        "status": "in_progress",
                        "name": name,
                        "call_id": f"call_{index}",
                        "arguments": "",
                    },
                }
            )
            opened.append((index, fid, name, chunks))
        for step in range(max(len(c[3]) for c in opened)):
            for index, fid, _, chunks in opened:
                if step < len(chunks):
                    self.add(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": fid,
                            "output_index": index,
                            "delta": chunks[step],
                        }
                    )
        for index, fid, name, chunks in opened:
            args = "".join(chunks)
            self.add(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": fid,
                    "output_index": index,
                    "arguments": args,
                }
            )
            item = {
                "id": fid,
                "type": "function_call",
                "status": "completed",
                "name": name,
                "call_id": f"call_{index}",
                "arguments": args,
            }
            self.add({"type": "response.output_item.done", "output_index": index, "item": item})
            self.output.append(item)
        return self

    def reasoning(self, *summaries: list[str]):
        index = len(self.output)
        rid = f"rs_{index}"
        self.add(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {"id": rid, "type": "reasoning", "status": "in_progress", "summary": []},
            }
        )
        parts = []
        for si, chunks in enumerate(summaries):
            self.add(
                {
                    "type": "response.reasoning_summary_part.added",
                    "item_id": rid,
                    "output_index": index,
                    "summary_index": si,
                    "part": {"type": "summary_text", "text": ""},
                }
            )
            for chunk in chunks:
                self.add(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": rid,
                        "output_index": index,
                        "summary_index": si,
                        "delta": chunk,
                    }
                )
            text = "".join(chunks)
            self.add(
                {
                    "type": "response.reasoning_summary_text.done",
                    "item_id": rid,
                    "output_index": index,
                    "summary_index": si,
                    "text": text,
                }
            )
            part = {"type": "summary_text", "text": text}
            self.add(
                {
                    "type": "response.reasoning_summary_part.done",
                    "item_id": rid,
                    "output_index": index,
                    "summary_index": si,
                    "part": part,
                }
            )
            parts.append(part)
        item = {"id": rid, "type": "reasoning", "status": "completed", "summary": parts}
        self.add({"type": "response.output_item.done", "output_index": index, "item": item})
        self.output.append(item)
        return self

    def finish(self, status: str = "completed"):
        extra = {"completed_at": 1719900002} if status == "completed" else {}
        if status == "incomplete":
            extra["incomplete_details"] = {"reason": "max_output_tokens"}
        if status == "failed":
            extra["error"] = {"code": "server_error", "message": "boom"}
        self.add({"type": f"response.{status}", "response": response(status, copy.deepcopy(self.output), **extra)})
        return self

    def sse(self, *, done: bool = True, headers: bool = True) -> bytes:
        return to_sse(self.events, done=done, headers=headers)


def to_sse(events: list[dict], *, done: bool = True, headers: bool = True) -> bytes:
    out = []
    for event in events:
        head = f"event: {event.get('type')}\n" if headers and isinstance(event, dict) else ""
        out.append(f"{head}data: {json.dumps(event, separators=(',', ':'))}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()
