"""The one redaction function: every writer (run folders, guard history, reports, --json) passes
what it writes through :func:`redact` first.

- dicts: the value of a key named like a secret (``api_key``, ``token``, ``password``, ``Authorization``
  ...) is replaced; ``*_env`` keys name a variable, not its value, and are kept.
- argv (a list of strings): the value after a flag named like a secret (``--api-key sk-...``), the
  value of ``--flag=value`` and of ``KEY=value`` words whose name looks secret.
- text: the userinfo of any URL in it (``http://user:password@host``) is dropped, and the token of a
  ``Bearer ...`` credential is replaced.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
SECRET_WORDS = ("api_key", "apikey", "authorization", "password", "passwd", "secret", "bearer", "credential")
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
_BEARER = re.compile(r"(?P<scheme>\bBearer\s+)[^\s\"']+", re.IGNORECASE)


def secret_name(name: str) -> bool:
    """``api_key``, ``hf_token``, ``--api-key``, ``Authorization``, ``HF_TOKEN``... but not ``api_key_env``
    (the name of a variable) and not ``max_tokens``-style counts."""
    k = name.lower().lstrip("-").replace("-", "_")
    if k.endswith("_env") or k.endswith("tokens"):
        return False
    return any(w in k for w in SECRET_WORDS) or k in ("token", "auth", "pw") or k.endswith(("_token", "_key"))


def redact_text(text: str) -> str:
    """``http://user:pw@host/x`` -> ``http://host/x`` wherever it appears; ``Bearer sk-..`` -> ``Bearer
    <redacted>``; other text unchanged."""
    if "@" in text:
        text = _USERINFO.sub(r"\g<scheme>", text)
    if "earer" in text:
        text = _BEARER.sub(rf"\g<scheme>{REDACTED}", text)
    return text


def _argv(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    hide_next = False
    for item in items:
        if not isinstance(item, str):
            out.append(redact(item))
            hide_next = False
            continue
        if hide_next and not item.startswith("--"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        name, eq, _ = item.partition("=")
        if eq and secret_name(name) and " " not in name:
            out.append(f"{name}={REDACTED}")
        elif item.startswith("-") and secret_name(item):
            out.append(item)
            hide_next = True
        else:
            out.append(redact_text(item))
    return out


def redact(obj: Any) -> Any:
    """``obj`` with every secret replaced by ``<redacted>`` (see the module docstring); a new object."""
    if isinstance(obj, dict):
        return {
            k: (REDACTED if isinstance(k, str) and secret_name(k) and v else redact(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return _argv(list(obj))
    if isinstance(obj, str):
        return redact_text(obj)
    if hasattr(obj, "model_dump"):  # a result model: redacted as the JSON it is written as
        return redact(obj.model_dump(mode="json"))
    return obj
