"""What may be shown of a credential-bearing text: one policy for URLs and field names, used by the
gateways (what a client, a log or a trace sees of an upstream) and by `orspec proxy`'s records.

- A URL keeps its scheme, host, port, path and its harmless query: its user and password go
  (`https://user:pw@host/` shows as `https://host/`), and the value of each query or fragment
  parameter whose name says it is a credential (`token`, `key`, `sig`, `access_token`...) is
  blanked.
- A field is a credential by its name (`secret_name`): read as snake_case words, so `userPw`,
  `X-Api-Key` and `user_pw` alike are, while `max_output_tokens` and `input_tokens` are not.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["REDACTED", "URL", "public_urls", "secret_name"]

REDACTED = "[redacted]"

# Credentials, in a body, its metadata, a tool's configuration or a URL's query, and sealed reasoning
# (`encrypted_content`, the model's hidden state). A word pattern matches whole words.
_SECRET_SUBSTRINGS = re.compile(
    r"passw|passphrase|secret|credential|authoriz|bearer|cookie|encrypted_content"
    r"|(?:api|private|access|signing|encryption|master|license|client|session|ssh|gpg|pgp|secret)_?key"
)
_SECRET_WORDS = re.compile(r"(?:^|_)(?:pw|pwd|pass|pin|otp|jwt|token|auth|signature|sig)(?:_|$)|^keys?$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")

URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_USERINFO = re.compile(r"(?<=://)[^/?#@\s]*@")
_PAIR = re.compile(r"([?&;#])([^=&;#]+)=([^&;#]*)")


@lru_cache(maxsize=4096)  # the same few names again and again; bounded, as bodies may bring any
def secret_name(name: str) -> bool:
    """Whether a field (or query parameter) called `name` holds a credential."""
    words = _SEPARATORS.sub("_", _CAMEL.sub("_", name).lower()).strip("_")
    return bool(_SECRET_SUBSTRINGS.search(words) or _SECRET_WORDS.search(words))


def public_urls(text: str) -> str:
    """`text` with each URL in it as it may be shown (see the module docstring)."""
    return URL.sub(_public, text) if "://" in text else text


def _public(match: re.Match[str]) -> str:
    url = _USERINFO.sub("", match.group(0), count=1)
    return _PAIR.sub(lambda m: f"{m[1]}{m[2]}={REDACTED}" if secret_name(m[2]) else m[0], url)
