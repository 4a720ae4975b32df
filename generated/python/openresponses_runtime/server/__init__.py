"""An Open Responses server for any provider: `create_app(provider, store=..., api_keys=...)`.

A provider is an object with `async def respond(request: ProviderRequest)` yielding steps
(`TextDelta`, `FunctionCallStart`, ...); the server validates requests against the generated
models, resolves `previous_response_id`, enforces `tool_choice`, turns the steps into a
spec-exact event stream (or one JSON response) and stores the result.

This subpackage is hand-written, except `routes`, `stubs`, `skeleton`, `request_schemas` and `native`,
which `orspec build` generates from the spec (each says so on its first line). Its rooms, and
what each may import, are mapped in the architecture guide.
It needs the `server` extra: `pip install 'openresponses-runtime[server]'`.
"""

try:
    import starlette  # noqa: F401
except ImportError:  # say which extra is missing, not which module deep inside failed
    raise ImportError(
        "openresponses_runtime.server needs the server extra: pip install 'openresponses-runtime[server]'"
    ) from None

from .acceptance import Accept
from .app import create_app, error_response, response_skeleton
from .auth import Tenant, read_keys_file
from .bounds import Bounds
from .demo import DemoProvider
from .emitter import Emitter, StreamViolation, ToolPolicy, sse_frame
from .errors import (
    InvalidRequest,
    ModelError,
    NotFound,
    NotImplementedOperation,
    OpenResponsesError,
    ServerError,
    StoreUnavailable,
    TooManyRequests,
    Unauthorized,
)
from .observability import Observability
from .routes import ROUTES, Operation
from .sealing import BrokenSeal, Sealer
from .steps import (
    Accepted,
    ArgumentsDelta,
    FunctionCallEnd,
    FunctionCallStart,
    Incomplete,
    MessageEnd,
    MessageStart,
    Provider,
    ProviderError,
    ProviderRequest,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningSummary,
    Refusal,
    Step,
    TextDelta,
    UsageReport,
    VendorItem,
)
from .store import MemoryStore, PostgresStore, ResponseStore, SQLiteStore, StoredResponse, StoreError, open_store
from .stubs import STUBS, Stubs

__all__ = [
    "ROUTES",
    "STUBS",
    "Accept",
    "Accepted",
    "ArgumentsDelta",
    "Bounds",
    "BrokenSeal",
    "DemoProvider",
    "Emitter",
    "FunctionCallEnd",
    "FunctionCallStart",
    "Incomplete",
    "InvalidRequest",
    "MemoryStore",
    "MessageEnd",
    "MessageStart",
    "ModelError",
    "NotFound",
    "NotImplementedOperation",
    "Observability",
    "OpenResponsesError",
    "Operation",
    "PostgresStore",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningSummary",
    "Refusal",
    "ResponseStore",
    "SQLiteStore",
    "Sealer",
    "ServerError",
    "Step",
    "StoreError",
    "StoreUnavailable",
    "StoredResponse",
    "StreamViolation",
    "Stubs",
    "TextDelta",
    "TooManyRequests",
    "ToolPolicy",
    "Tenant",
    "Unauthorized",
    "UsageReport",
    "VendorItem",
    "create_app",
    "error_response",
    "open_store",
    "read_keys_file",
    "response_skeleton",
    "sse_frame",
]
