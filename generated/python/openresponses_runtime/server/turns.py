"""One turn of a conversation: a request made ready for the provider (its history read, its
reasoning unsealed, its response skeleton made), the provider's steps driven through the emitter
to the end of the response, and the response saved.

`Turns` is shared by the create handler, WebSocket turns and background runs alike.

Once a response has begun, any failure (of the provider, with an exception of any class; of the
store saving the response; of the server itself) ends it `failed`, with an `error` event when it
is streamed; only the client leaving and the process stopping end it otherwise. The response is
saved before `response.completed` is sent, so a client is never told of a completed response the
store lacks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

from .acceptance import Acceptance, check_function_outputs
from .auth import current_tenant
from .bounds import Bounds
from .emitter import Emitter, ToolPolicy
from .errors import OpenResponsesError, ServerError, ServerShuttingDown
from .ids import new_id
from .observability import note_response
from .resource import input_items, response_skeleton
from .sealing import INCLUDE as SEALED_REASONING
from .sealing import Sealer, unseal_compaction, unseal_reasoning
from .shutdown import ending
from .steps import Incomplete, Provider, ProviderError, ProviderRequest
from .store import ResponseStore, StoredResponse, context
from .wire import dumps

__all__ = ["Turns", "as_error", "save_error", "stopping"]

log = logging.getLogger("openresponses_runtime.server")


class Turns:
    """What a turn needs: the provider, the store, what the server accepts, the reasoning sealer,
    the model a request that names none gets, `debug` (the stream checker on every response) and
    what one request may ask (`bounds`)."""

    def __init__(
        self,
        provider: Provider,
        store: ResponseStore,
        *,
        acceptance: Acceptance,
        sealer: Sealer,
        default_model: str,
        debug: bool,
        bounds: Bounds | None = None,
    ):
        self.bounds = bounds or Bounds()
        self.provider = provider
        self.store = store
        self.acceptance = acceptance
        self.sealer = sealer
        self.default_model = default_model
        self.debug = debug

    async def prepare(
        self, data: dict[str, Any], body: Any, store: ResponseStore | None = None
    ) -> tuple[dict[str, Any], ProviderRequest, list[dict], ToolPolicy]:
        """The response skeleton, the provider request and this turn's own input items as sent (sealed
        blobs sealed: what `save` stores)."""
        self.bounds.check_request(data)
        admitted = self.acceptance.admit(data, body)  # unknown tool types are never offered, nor echoed
        data, body = admitted.data, admitted.body
        owner = _owner()
        # What the client sent is what is stored and listed (`input_items`): sealed state stays sealed
        # at rest. Only the provider's copy, this turn's and the history's, is opened.
        sent = input_items(data.get("input"))
        own_input = unseal_reasoning(self.sealer, sent, tenant=owner)
        own_input = unseal_compaction(self.sealer, own_input, tenant=owner)
        previous = data.get("previous_response_id")
        history = await self.history(previous, owner, store)
        history = unseal_reasoning(self.sealer, history, None, tenant=owner)
        history = unseal_compaction(self.sealer, history, None, tenant=owner)
        check_function_outputs(own_input, history)
        response_id = new_id("resp")
        model = data.get("model") or self.default_model
        response = response_skeleton(data, response_id, model)
        policy = ToolPolicy.from_request(response["tools"], data.get("tool_choice"))
        request = ProviderRequest(
            response_id=response_id,
            model=model,
            input=history + own_input,
            instructions=data.get("instructions"),
            tools=response["tools"],
            tool_choice=policy.mode,
            allowed_tools=policy.allowed,
            max_output_tokens=data.get("max_output_tokens"),
            reasoning=response["reasoning"],
            body=body,
            metadata=response["metadata"],
            ignored=admitted.ignored,
        )
        return response, request, sent, policy

    async def history(
        self, previous: str | None, owner: str | None, store: ResponseStore | None = None
    ) -> list[dict[str, Any]]:
        """The conversation up to `previous`, as `owner`'s tenant may see it, within the context bound."""
        if not previous:
            return []
        return await context(store or self.store, previous, owner=owner, max_bytes=self.bounds.max_context_bytes)

    def seal(self, data: dict[str, Any]) -> Callable[[str, dict[str, Any], str | None], str | None]:
        """How the emitter seals a reasoning item: always when the request asks to carry reasoning
        (`include`), and whenever the provider left opaque state its next turn needs (a gateway's
        thinking signature), so that state comes back through `previous_response_id` or the client."""
        include = data.get("include")
        carry = bool(include and SEALED_REASONING in include)
        owner = _owner()  # sealed for the caller's tenant: no other key's request opens it

        def seal(item_id: str, fields: dict[str, Any], state: str | None) -> str | None:
            if carry or state is not None:
                return self.sealer.seal_reasoning(item_id, fields, state, tenant=owner)
            return None

        return seal

    async def save(
        self,
        response: dict[str, Any],
        own_input: list[dict],
        store: ResponseStore | None = None,
        encoded: bytes | None = None,
    ) -> None:
        """Keep the finished response in `store` (default: the server's store, unless `store: false`);
        `encoded`: the response as JSON, when it is at hand."""
        if store is None and response.get("store") is False:
            return
        record = StoredResponse(
            response["id"],
            response.get("previous_response_id"),
            own_input,
            list(response["output"]),
            response,
            encoded,
            owner=_owner(),
        )
        await (store or self.store).put(record)

    async def run(
        self,
        emitter: Emitter,
        steps: AsyncIterator[Any],
        first: Any,
        own_input: list[dict],
        deliver: Callable[[list[Any]], Awaitable[None]] | None = None,
        store: ResponseStore | None = None,
    ) -> bytes | None:
        """Drive the provider's steps through `emitter` to the end of the response, save it, then end it.

        `deliver` is awaited with each batch of events (one per provider step) as soon as it is
        made. Without it nobody sees them (a non-streamed response), and the response is returned
        encoded, as it was saved. A provider that fails, with an exception of any kind, ends the
        response `failed`; so does a save that fails, before the client is told the response
        completed, so that no client holds a completed response the store lacks. Whatever else
        breaks once the response has begun (the emitter meeting a value it cannot write, a bug)
        ends it failed too, through `Emitter.abort`. A failure to deliver (the client left),
        cancellation and the process stopping propagate, unsaved."""
        sent = 0  # events made and delivered: where the ending's numbering goes on
        delivering = False

        async def send(batch: list[Any]) -> None:
            nonlocal sent, delivering
            if deliver is not None:
                delivering = True
                await deliver(batch)
                delivering = False
            sent += len(batch)

        try:
            batch = emitter.start()
            if batch:  # none when nobody sees the events (a non-streamed response)
                await send(batch)
            try:
                try:
                    with ending() as shutdown:  # the server's shutdown deadline cancels this
                        step = first
                        while step is not None:
                            batch = emitter.step(step)
                            if batch:
                                await send(batch)
                            if isinstance(step, Incomplete):
                                break
                            try:
                                step = await steps.__anext__()
                            except StopAsyncIteration:
                                break
                    if shutdown.cancelled_caught:
                        # A frame cut short is whole: uvicorn writes it before it waits.
                        delivering, sent = False, emitter.seq
                        raise ServerShuttingDown()
                    final: list[Any] = []
                except BaseException as exc:
                    # Events made and not delivered (the emitter broke mid-step) leave `abort` to end it.
                    if delivering or stopping(exc) or emitter.seq != sent:
                        raise
                    final = emitter.fail(as_error(exc))
            finally:
                if getattr(steps, "ag_frame", True) is not None:  # a generator run to its end has nothing to close
                    with anyio.CancelScope(shield=True):
                        await steps.aclose()
            # Saved before the client hears of the end, so that a save that fails can still end it failed.
            # Unseen (no events made), the response is ended in place, and failed after all should its save fail.
            unseen = not emitter.whole and not emitter.finished
            response = emitter.preview() if not unseen else emitter.response
            if unseen:
                final += emitter.finish()
            encoded = dumps(response) if deliver is None else None
            try:
                await self.save(response, own_input, store, encoded)
            except Exception as exc:
                failure = save_error(exc)
                # each adds nothing to a response that has failed already
                final += emitter.fail_unseen(failure) if unseen else emitter.fail(failure)
            else:
                if not unseen:
                    final += emitter.finish()
        except BaseException as exc:
            if delivering or stopping(exc):
                raise
            log.error("response %s broke off", emitter.response["id"], exc_info=exc)
            final = emitter.abort(ServerError("The server had an error while making the response."), sent)
            try:
                await self.save(emitter.response, own_input, store)
            except Exception as error:
                save_error(error)  # logged; the client still hears of the failure
        note_response(emitter.response)
        if deliver is None:
            return None if emitter.error is not None else encoded
        await deliver(final)
        return None

    async def first_step(self, request: ProviderRequest) -> tuple[AsyncIterator[Any], Any]:
        """The provider's steps and the first of them, pulled before any byte is sent so that
        early errors (a 429, say) keep their own status."""
        steps = aiter(self.provider.respond(request))
        try:
            first = await steps.__anext__()
        except StopAsyncIteration:
            first = None
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await steps.aclose()
            if not stopping(exc):  # answered as it would end a stream: a timeout is a timeout
                raise as_error(exc) from exc
            raise
        return steps, first


def _owner() -> str | None:
    """The owner of what the request being served makes: its tenant's."""
    tenant = current_tenant()
    return None if tenant is None else tenant.owner


def save_error(exc: Exception) -> OpenResponsesError:
    """What a failed save ends the response with: the store's own 503 (logged by the store), or a bug."""
    if isinstance(exc, OpenResponsesError):
        return exc
    log.error("saving the response failed", exc_info=exc)
    return ServerError("The server had an error while saving the response.")


def stopping(exc: BaseException) -> bool:
    """Cancellation (the client left, a deadline passed) or the process stopping: what ends a
    response without being its failure, so it is never answered as one."""
    return isinstance(exc, anyio.get_cancelled_exc_class() | KeyboardInterrupt | SystemExit)


def as_error(exc: BaseException) -> OpenResponsesError:
    """What a provider's failure ends the response with (logged, unless it is the spec's own error)."""
    if isinstance(exc, OpenResponsesError):
        return exc
    if isinstance(exc, ProviderError):
        log.error("provider error: %s", exc)
        return ServerError(f"The provider failed: {exc}", code="provider_error")
    if isinstance(exc, TimeoutError):  # its upstream stopped answering: an outage to report, not a bug to trace
        log.error("provider timed out")
        return ServerError("The provider did not answer in time.", code="provider_timeout")
    log.exception("provider failed")
    return ServerError(f"The provider failed: {type(exc).__name__}")
