"""litellm's `responses`, unchanged, against BASE_URL: plain, streamed, and a tool answered through
`previous_response_id`. Prints one JSON object of what it saw (tests/e2e/test_clients_python.py). It runs in
a process of its own, as a user's program would: litellm leaves a non-daemon logging thread behind."""

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # it fetches a price list at import otherwise

import litellm  # noqa: E402

options = {"model": "openai/demo", "api_base": os.environ["BASE_URL"], "api_key": os.environ["API_KEY"]}
tool = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}

plain = litellm.responses(input="Hello there", **options)
events = list(litellm.responses(input="Stream this please", stream=True, **options))
asked = litellm.responses(input="What is the weather in Paris?", tools=[tool], **options)
(call,) = [item for item in asked.output if item.type == "function_call"]
output = {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny in example city"}
answered = litellm.responses(input=[output], previous_response_id=asked.id, tools=[tool], **options)

print(
    json.dumps(
        {
            "plain": plain.output[0].content[0].text,
            "deltas": [event.delta for event in events if event.type == "response.output_text.delta"],
            "last": events[-1].type,
            "call": [call.name, json.loads(call.arguments)],
            "answered": answered.output[0].content[0].text,
        }
    )
)
