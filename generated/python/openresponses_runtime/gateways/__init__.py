"""Providers in front of other model APIs, one module per upstream protocol, each listed in `registry`.

    from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
    from openresponses_runtime.server import create_app

    app = create_app(ChatCompletionsProvider(base_url="https://api.openai.com/v1"), api_keys="sk-...")

`chat_completions`: an OpenAI-compatible `/chat/completions`; `anthropic_messages`: Anthropic's
`/v1/messages` (`AnthropicMessagesProvider`, configured by `$ANTHROPIC_API_KEY`); `gemini`: Google's
Gemini `streamGenerateContent` (`GeminiProvider`, configured by `$GEMINI_API_KEY`). Each is a
`base.GatewayProvider`: the transport, the mapping of upstream errors and compaction are shared;
a gateway is its mappings. `orspec serve --gateway NAME` runs one with no code at all.

A project configures a gateway (or subclasses it to change one mapping); it never copies it.
It needs the server (its upstream client, `openresponses_runtime.upstream`, reads answers with
httptools): `pip install 'openresponses-runtime[server,gateways]'`.
"""

try:
    import httptools as _httptools  # noqa: F401
except ImportError:  # say which extra is missing, not which module deep inside failed
    raise ImportError(
        "openresponses_runtime.gateways needs the gateways extra: pip install 'openresponses-runtime[gateways]'"
    ) from None

from .registry import GATEWAYS, Gateway

__all__ = ["GATEWAYS", "Gateway"]
