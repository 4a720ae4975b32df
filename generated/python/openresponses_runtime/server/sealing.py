"""Sealed reasoning: what a provider needs to continue, carried by the client instead of a store.

With `include: ["reasoning.encrypted_content"]` every reasoning item the server emits carries
`encrypted_content`: the item's summary (and the provider's own opaque state, the
`encrypted_content` of its `ReasoningSummary` step) as JSON, sealed with AES-GCM under the
server's key and bound to the item's id (the associated data), so a blob moved to another item
does not open. When a client sends the item back (with its id, or without, as Codex does), the
server unseals it and hands the provider the full item, id included, as the provider produced it.
A blob that was changed, or sealed under another key, is refused with a 400 whose `param` names
the item (`input[3].encrypted_content`). A provider's own state (a gateway's thinking signature,
from `ReasoningSummary` or `ReasoningEnd`) is sealed into its item even unasked: without it the
next turn, by `previous_response_id` or by the client, could not continue that reasoning.

The key comes from `create_app(reasoning_key=...)` (`orspec serve --reasoning-key`), else
`$ORSPEC_REASONING_KEY`, else a random key made once per process: items sealed by one process
cannot be unsealed by another, nor after a restart. Servers behind a load balancer, or clients
that keep conversations across restarts, need a key set on every server. Any string serves as a
key (it is stretched with HKDF-SHA256); use a long random one. The server's own store is not the
client's mistake: a stored response's reasoning that no longer opens (the key changed) reaches the
provider as stored, without its blob, and a warning says so.

A gateway can seal more than reasoning the same way: `Sealer(key).seal(item_id, state)` and
`.unseal(item_id, blob)`, with the key it gives `create_app`.

Blobs are sealed for the API key's tenant too: the associated data carries the tenant's owner tag
(`auth.Tenant.owner`, a keyed hash of the key), so a blob sealed for one key is refused (400) from
another, even on the same server. And for the type of item they travel in (`kind`): a reasoning
item's blob put in a compaction item (or the reverse) does not open there, a 400 like any other
blob that does not open, never a state of one kind read as another's.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .errors import InvalidRequest

__all__ = ["INCLUDE", "BrokenSeal", "Sealer", "seal_compaction", "unseal_compaction", "unseal_reasoning"]

log = logging.getLogger("openresponses_runtime.server")

KEY_ENV = "ORSPEC_REASONING_KEY"
INCLUDE = "reasoning.encrypted_content"
_VERSION = b"\x01"  # the first byte of every blob, so that the format can change
_NONCE = 12
_PROCESS_KEY = os.urandom(32)  # used when no key is configured: valid for this process only


class BrokenSeal(ValueError):
    """A blob that this key did not seal for this item (changed, moved, or sealed under another key)."""


class Sealer:
    """AES-GCM under one key. `key`: any non-empty string or bytes; None reads `$ORSPEC_REASONING_KEY`,
    else uses the process's random key."""

    def __init__(self, key: str | bytes | None = None):
        if key is None:
            key = os.environ.get(KEY_ENV) or None
        if key is None:
            self._aead = AESGCM(_PROCESS_KEY)
            return
        secret = key.encode() if isinstance(key, str) else bytes(key)
        if not secret:
            raise ValueError(f"the reasoning key is empty: give a long random string, or unset {KEY_ENV}")
        derived = HKDF(hashes.SHA256(), 32, salt=None, info=b"openresponses reasoning seal").derive(secret)
        self._aead = AESGCM(derived)

    def seal(self, item_id: str, state: Any, *, tenant: str | None = None, kind: str = "") -> str:
        """`state` (anything JSON can hold) as an opaque string that only `unseal(item_id, ...)` opens,
        and with `tenant` (an owner tag, `auth.Tenant.owner`), only `unseal(..., tenant=tenant)`; with
        `kind` (the item type it travels in), only `unseal(..., kind=kind)`.

        The blob names `item_id` in the clear (it is the associated data, with the tenant), so that an
        item sent back without its id, as Codex sends reasoning, can still be opened."""
        bound = item_id.encode()
        if len(bound) > 0xFFFF:
            raise ValueError("an item id to seal for is at most 65535 bytes")
        nonce = os.urandom(_NONCE)
        plain = json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode()
        sealed = self._aead.encrypt(nonce, plain, _associated(bound, tenant, kind))
        blob = _VERSION + len(bound).to_bytes(2, "big") + bound + nonce + sealed
        return base64.urlsafe_b64encode(blob).decode().rstrip("=")

    def unseal(self, item_id: str | None, blob: str, *, tenant: str | None = None, kind: str = "") -> Any:
        """The state `seal(item_id, state)` sealed in `blob`; `BrokenSeal` for any other blob.

        `item_id` None: the item came without one; the blob opens for the item it was sealed for."""
        try:
            raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        except (binascii.Error, ValueError):
            raise BrokenSeal("it is not a blob this server sealed") from None
        if raw[:1] != _VERSION or len(raw) < 3:
            raise BrokenSeal("it is not a blob this server sealed")
        size = int.from_bytes(raw[1:3], "big")
        bound, rest = raw[3 : 3 + size], raw[3 + size :]
        if len(rest) <= _NONCE:
            raise BrokenSeal("it is not a blob this server sealed")
        if item_id is not None and item_id.encode() != bound:
            raise BrokenSeal("it was sealed for another item")
        try:
            plain = self._aead.decrypt(rest[:_NONCE], rest[_NONCE:], _associated(bound, tenant, kind))
        except InvalidTag:
            raise BrokenSeal(
                "it was changed, or sealed with another key, for another API key or for another type of item"
            ) from None
        return json.loads(plain)

    def seal_reasoning(
        self, item_id: str, fields: dict[str, Any], provider_state: str | None, *, tenant: str | None = None
    ) -> str:
        """A reasoning item's blob: its id and `fields` (summary, content), and the provider's own opaque state."""
        state = {"id": item_id, **fields}
        if provider_state is not None:
            state["encrypted_content"] = provider_state
        return self.seal(item_id, state, tenant=tenant, kind="reasoning")


def _associated(item_id: bytes, tenant: str | None, kind: str) -> bytes:
    """The associated data: the item's id, the tenant's owner tag when sealed for one, and the item
    type when sealed as one (a prefix, so that no id can pass for a type)."""
    bound = item_id if tenant is None else item_id + b"\x00" + tenant.encode()
    return bound if not kind else kind.encode() + b"\x00" + bound


def unseal_reasoning(
    sealer: Sealer,
    items: list[dict[str, Any]],
    param: str | None = "input[{}].encrypted_content",
    *,
    tenant: str | None = None,
) -> list[dict[str, Any]]:
    """`items` with every reasoning item that carries a blob replaced by the full item it seals.

    A blob that does not open is the client's mistake (`InvalidRequest`, 400, its `param` is `param`
    with the item's index), unless `param` is None: items of the server's own store, sealed under a
    key it no longer has (a restart without a set key), go on as stored, without their blob."""
    if not any(item.get("type") == "reasoning" and item.get("encrypted_content") for item in items):
        return items  # most requests
    opened = []
    for i, item in enumerate(items):
        blob = item.get("encrypted_content") if item.get("type") == "reasoning" else None
        if not blob:
            opened.append(item)
            continue
        try:
            state = sealer.unseal(item.get("id") or None, blob, tenant=tenant, kind="reasoning")
        except BrokenSeal as exc:
            if param is None:
                log.warning(
                    "stored reasoning item %s no longer opens (%s); the provider gets its summary", item.get("id"), exc
                )
                opened.append({k: v for k, v in item.items() if k != "encrypted_content"})
                continue
            raise InvalidRequest(
                f"The encrypted_content of reasoning item {item.get('id')!r} does not open: {exc}. Send "
                "reasoning items back unchanged, to a server with the key that sealed them.",
                code="invalid_encrypted_content",
                param=param.format(i),
            ) from None
        opened.append({"type": "reasoning", **state})
    return opened


def seal_compaction(sealer: Sealer, output: list[dict[str, Any]], *, tenant: str | None) -> list[dict[str, Any]]:
    """`compact`'s output with each compaction item's blob (the provider's, or the default's) sealed
    for the caller's tenant: a client can carry it, not read it, change it, or hand it to another key."""
    sealed = []
    for item in output:
        blob = item.get("encrypted_content") if item.get("type") == "compaction" else None
        if blob and item.get("id"):
            state = {"encrypted_content": blob}
            item = {**item, "encrypted_content": sealer.seal(item["id"], state, tenant=tenant, kind="compaction")}
        sealed.append(item)
    return sealed


def unseal_compaction(
    sealer: Sealer,
    items: list[dict[str, Any]],
    param: str | None = "input[{}].encrypted_content",
    *,
    tenant: str | None,
) -> list[dict[str, Any]]:
    """`items` with each compaction item's blob opened back into the provider's own; one that does not
    open (forged, changed, another key's) is a 400 `invalid_encrypted_content` naming the item, unless
    `param` is None: the server's own store's, sealed under a key it no longer has, go on without it."""
    if not any(item.get("type") == "compaction" for item in items):
        return items  # most requests
    opened = []
    for i, item in enumerate(items):
        blob = item.get("encrypted_content") if item.get("type") == "compaction" else None
        if blob:
            try:
                state = sealer.unseal(item.get("id") or None, blob, tenant=tenant, kind="compaction")
            except BrokenSeal as exc:
                if param is None:
                    log.warning(
                        "stored compaction item %s no longer opens (%s); it goes on without", item.get("id"), exc
                    )
                    opened.append({k: v for k, v in item.items() if k != "encrypted_content"})
                    continue
                raise InvalidRequest(
                    f"The encrypted_content of compaction item {item.get('id')!r} does not open: {exc}. Send "
                    "compaction items back unchanged, with the API key that compacted them.",
                    code="invalid_encrypted_content",
                    param=param.format(i),
                ) from None
            item = {**item, "encrypted_content": state["encrypted_content"]}
        opened.append(item)
    return opened
