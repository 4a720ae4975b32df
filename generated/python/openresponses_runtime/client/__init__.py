"""The Open Responses client: `Client` and `AsyncClient` on httpx, with the agentic loop.

    from openresponses_runtime.client import Client

    client = Client(base_url="http://127.0.0.1:8000/v1", api_key="sk-...")
    response = client.responses.create(model="m", input="Hello")
    result = client.responses.run(model="m", input="Weather in Paris?", tools=[get_weather])

It needs httpx (and websockets for `responses.connect()`): `pip install 'openresponses-runtime[client]'`.
The rest of the runtime imports with pydantic alone.
"""

try:
    import httpx as _httpx  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "openresponses_runtime.client needs httpx: pip install 'openresponses-runtime[client]' (or httpx)"
    ) from exc

from ._client import AsyncClient, AsyncResponses, AsyncRunStream, Client, Responses, RunStream
from ._create import CREATE_PARAMS
from ._errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    OpenResponsesError,
    PermissionDeniedError,
    RateLimitError,
    StreamViolation,
    UnprocessableEntityError,
)
from ._loop import RunResult, ToolCall, response_text
from ._streams import AsyncEventStream, EventStream
from ._tools import Tool
from ._validation import InvalidData, SchemaIssue
from ._websocket import AsyncResponsesSession, ResponsesSession

__all__ = [
    "CREATE_PARAMS",
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncClient",
    "AsyncEventStream",
    "AsyncResponses",
    "AsyncResponsesSession",
    "AsyncRunStream",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConfigurationError",
    "ConflictError",
    "EventStream",
    "InternalServerError",
    "InvalidData",
    "NotFoundError",
    "OpenResponsesError",
    "PermissionDeniedError",
    "RateLimitError",
    "Responses",
    "ResponsesSession",
    "RunResult",
    "RunStream",
    "SchemaIssue",
    "StreamViolation",
    "Tool",
    "ToolCall",
    "UnprocessableEntityError",
    "response_text",
]
