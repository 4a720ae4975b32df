"""Every gateway the runtime ships, by the name `orspec serve --gateway` and the scaffold take.

What the command line, the scaffold and the docs say of a gateway comes from its entry here, so a
new gateway is its module (a `GatewayProvider` with its mappings) and one entry. This module
imports nothing else of the runtime: the toolchain reads it without loading a gateway.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["GATEWAYS", "UPSTREAM_KEY_VARIABLE", "Gateway"]

UPSTREAM_KEY_VARIABLE = "ORSPEC_UPSTREAM_API_KEY"  # what `orspec serve` reads when the provider's own is unset


@dataclass(frozen=True)
class Gateway:
    """One gateway.

    `name`: its command-line name; `module` and `provider`: where its `GatewayProvider` lives in
    `openresponses_runtime.gateways`; `upstream`: what it fronts, as a sentence says it;
    `key_variable`: the environment variable the provider's own SDK reads its key from;
    `base_url`: the upstream's public API root (None: every deployment names its own);
    `api_root`: the path of that root on its server (a fake upstream serves the API under it);
    `settings`: the provider's environment variables and what each sets; `run_env`: what a
    README's run command sets for it; `notes`: what else a README says of its configuration;
    `thinking_tables`: whether its provider takes `thinking_budgets` and `thinking_levels` (rows
    over its effort tables, which `orspec serve --thinking-budget` and `--thinking-level` set)."""

    name: str
    module: str
    provider: str
    upstream: str
    key_variable: str
    base_url: str | None
    api_root: str
    settings: tuple[tuple[str, str], ...]
    run_env: str = ""
    notes: str = ""
    thinking_tables: bool = False

    def load(self) -> Any:
        """The provider class (importing the gateway, which needs the `gateways` extra)."""
        return getattr(importlib.import_module(f"{__package__}.{self.module}"), self.provider)


GATEWAYS: dict[str, Gateway] = {
    gateway.name: gateway
    for gateway in (
        Gateway(
            name="chat-completions",
            module="chat_completions",
            provider="ChatCompletionsProvider",
            upstream="an OpenAI-compatible Chat Completions API",
            key_variable="OPENAI_API_KEY",
            base_url=None,
            api_root="/v1",
            settings=(
                ("CHAT_COMPLETIONS_BASE_URL", "the upstream API root, e.g. `https://api.openai.com/v1` (required)"),
                ("CHAT_COMPLETIONS_API_KEY", "the upstream bearer token"),
                ("CHAT_COMPLETIONS_MODEL", "the upstream model, in place of the one a request names (optional)"),
            ),
            run_env='CHAT_COMPLETIONS_BASE_URL=https://api.openai.com/v1 CHAT_COMPLETIONS_API_KEY="$OPENAI_API_KEY"',
        ),
        Gateway(
            name="anthropic-messages",
            module="anthropic_messages",
            provider="AnthropicMessagesProvider",
            upstream="Anthropic's Messages API",
            key_variable="ANTHROPIC_API_KEY",
            base_url="https://api.anthropic.com",
            api_root="",
            settings=(
                ("ANTHROPIC_API_KEY", "the key sent upstream as `x-api-key` (required)"),
                ("ANTHROPIC_BASE_URL", "the upstream root, default `https://api.anthropic.com`"),
                ("ANTHROPIC_MODEL", "the upstream model, in place of the one a request names (optional)"),
            ),
            notes="A request that sets no `max_output_tokens` asks for 4096 tokens (Anthropic requires a limit;"
            " the provider's `max_tokens` keyword changes it), plus the thinking budget when `reasoning` turns"
            " thinking on (the provider's `thinking_budgets` and `thinking_levels` change its effort tables)."
            " `stop_sequences` and other Anthropic-only fields go in `extra_body`, or in the provider's"
            " `messages_request`.",
            thinking_tables=True,
        ),
        Gateway(
            name="gemini",
            module="gemini",
            provider="GeminiProvider",
            upstream="Google's Gemini API",
            key_variable="GEMINI_API_KEY",
            base_url="https://generativelanguage.googleapis.com/v1beta",
            api_root="/v1beta",
            settings=(
                ("GEMINI_API_KEY", "the key sent upstream as `x-goog-api-key` (required)"),
                (
                    "GEMINI_BASE_URL",
                    "the upstream API root, default `https://generativelanguage.googleapis.com/v1beta`",
                ),
                ("GEMINI_MODEL", "the upstream model, in place of the one a request names (optional)"),
            ),
            notes="`reasoning` sets `generationConfig.thinkingConfig` (the provider's `thinking_budgets` and"
            " `thinking_levels` change its effort tables). Safety settings and other Gemini-only fields go in"
            " `extra_body`, or in the provider's `gemini_request`.",
            thinking_tables=True,
        ),
    )
}
