"""One policy for what may be shown of a URL (`openresponses_runtime.redaction`), used by the
gateways and by `orspec proxy`'s records alike."""

from __future__ import annotations

import logging

import pytest
from openresponses_runtime.gateways.chat_completions import ChatCompletionsProvider
from openresponses_runtime.redaction import public_urls, secret_name
from orspec.proxy.recorder import scrub

URLS = {
    "https://bob:hunter2@db.example:5432/x?token=T1&page=2#frag": "https://db.example:5432/x?token=[redacted]&page=2#frag",
    "http://a.example/?sig=S1&key=K1&alt=sse": "http://a.example/?sig=[redacted]&key=[redacted]&alt=sse",
    "https://h.example/cb#access_token=A1&state=s": "https://h.example/cb#access_token=[redacted]&state=s",
    "https://only-user@h.example/p": "https://h.example/p",
    "https://h.example/@handle?q=1": "https://h.example/@handle?q=1",  # an @ in the path is no user
}


@pytest.mark.parametrize(("url", "shown"), URLS.items())
def test_one_policy_for_every_caller(url, shown, caplog):
    said = f"could not reach {url} (after 3 tries)"
    assert public_urls(said) == f"could not reach {shown} (after 3 tries)"
    assert scrub({"error": said}) == {"error": f"could not reach {shown} (after 3 tries)"}  # the proxy's records
    gateway = ChatCompletionsProvider(base_url="http://127.0.0.1:9/v1", api_key="upstream-key")
    assert gateway.scrub(said) == public_urls(said)  # the gateways' answers and logs
    with caplog.at_level(logging.INFO, "openresponses_runtime.gateways"):
        logging.getLogger("openresponses_runtime.gateways").info("retrying %s", url)
    assert caplog.records[-1].getMessage() == f"retrying {shown}"


def test_credential_names_are_whole_words():
    assert all(map(secret_name, ["token", "access_token", "X-Api-Key", "userPw", "sig", "key", "client_secret"]))
    assert not any(map(secret_name, ["max_output_tokens", "input_tokens", "page", "alt", "keyboard", "signal"]))
