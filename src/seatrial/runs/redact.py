"""The one redaction function: every writer (run folders, guard history, reports, --json) passes
what it writes through :func:`redact` first.

- dicts: the value of a key named like a secret (``api_key``, ``token``, ``password``, ``Authorization``
  ...) is replaced; ``*_env`` keys name a variable, not its value, and are kept.
- argv (a list of strings): the value after a flag named like a secret (``--api-key sk-...``), the
  value of ``--flag=value`` and of ``KEY=value`` words whose name looks secret.
- text: the userinfo of any URL in it (``http://user:password@host``) is dropped, the token of a
  ``Bearer ...`` or ``Basic ...`` credential and the value of a query parameter named like a secret
  (``?token=...``, ``&api_key=...``) are replaced, and so is every secret seatrial knows (:func:`remember`:
  the API key it sends, a URL's credentials, a child's ``--api-key`` and secret environment), with its
  base64 and URL-quoted forms, wherever it appears: a server that echoes the Authorization header in an
  error or a child that prints its arguments writes none of them through seatrial.
- environment variables (:func:`env_digests`): every value by its SHA-256; the value itself only where
  neither the name (a word such as KEY, TOKEN, SECRET, PASS, AUTH, PSK, PEM, PRIVATE, HMAC, SIGN, CRED,
  COOKIE) nor the shape (``Bearer ...``, URL userinfo, a PEM block, a long run of hex or base64) looks secret.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

REDACTED = "<redacted>"
SECRET_WORDS = ("api_key", "apikey", "authorization", "password", "passwd", "secret", "bearer", "credential")
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
_BEARER = re.compile(r"(?P<scheme>\bBearer\s+)[^\s\"']+", re.IGNORECASE)
# HTTP basic credentials: base64 with a digit, ``+``, ``/`` or padding (not the word "Basic information")
_BASIC = re.compile(r"(?P<scheme>\bBasic\s+)(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}")
# a query parameter (``?name=value`` / ``&name=value``); its value goes where the name looks secret
_QUERY = re.compile(r"(?P<lead>[?&](?P<name>[A-Za-z0-9_.\-]+)=)(?P<value>[^&#\s\"'<>]+)")
#: query parameter names that carry a credential beyond :func:`secret_name`'s (``?key=``, ``?sig=``)
QUERY_SECRET_NAMES = frozenset(("key", "sig", "signature", "code", "access_token", "session", "jwt"))
#: a known secret shorter than this is not searched for in text (``pw`` would redact every "pw")
MIN_KNOWN_CHARS = 6
_known: tuple[str, ...] = ()  # the secrets seatrial holds, with their encoded forms, longest first
_known_lock = threading.Lock()
#: words of an environment variable's name (split at anything not a letter or digit) that mark it secret
ENV_SECRET_WORDS = frozenset(("KEY", "KEYS", "TOKEN", "SECRET", "SECRETS", "PASS", "PASSWD", "PASSWORD", "PWD",
                              "PW", "AUTH", "PSK", "PEM", "PRIVATE", "HMAC", "SIGN", "SIGNATURE", "SIGNING", "CRED",
                              "CREDS", "CREDENTIAL", "CREDENTIALS", "COOKIE", "COOKIES", "SESSION", "BEARER", "JWT",
                              "SALT", "APIKEY"))  # fmt: skip
#: ... or that contain one of these (``ACCESSKEY``, ``AUTHTOKEN``, ``DBPASSWORD``)
ENV_SECRET_PARTS = ("SECRET", "PASSW", "PASSPHRASE", "APIKEY", "ACCESSKEY", "PRIVKEY", "PRIVATE", "CREDENTIAL",
                    "COOKIE", "AUTHTOKEN")  # fmt: skip
#: the shell's working folders: a path, although ``PWD`` is also a password's abbreviation (``DB_PWD``)
NOT_SECRET_ENV = frozenset(("PWD", "OLDPWD"))
_SECRET_SHAPES = (
    re.compile(r"\b(Bearer|Basic|Token)\s+\S{8,}", re.IGNORECASE),
    re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s]+@"),  # URL userinfo
    re.compile(r"-----BEGIN [A-Z ]+-----"),
    re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{32,}(?![0-9a-fA-F])"),  # a long hex digest or key
    re.compile(r"(?=[A-Za-z0-9+_]*[0-9])(?=[A-Za-z0-9+_]*[a-z])(?=[A-Za-z0-9+_]*[A-Z])[A-Za-z0-9+_]{24,}=*"),
)


def secret_name(name: str) -> bool:
    """``api_key``, ``hf_token``, ``--api-key``, ``Authorization``, ``HF_TOKEN``... but not ``api_key_env``
    (the name of a variable), not ``max_tokens``-style counts and not ``joules_per_output_token``-style rates."""
    k = name.lower().lstrip("-").replace("-", "_")
    if k.endswith("_env") or k.endswith("tokens") or "_per_" in k:
        return False
    return any(w in k for w in SECRET_WORDS) or k in ("token", "auth", "pw") or k.endswith(("_token", "_key"))


def secret_env_name(name: str) -> bool:
    """An environment variable named like a secret: ``NCCL_SOCKET_PSK``, ``VLLM_AUTH``, ``TORCH_PRIVATE_KEY_PEM``,
    ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY`` (but not ``TOKENIZERS_PARALLELISM`` or ``NCCL_IB_HCA``)."""
    if name in NOT_SECRET_ENV:
        return False
    words = [w.rstrip("0123456789") for w in re.split(r"[^A-Za-z0-9]+", name.upper()) if w]
    return secret_name(name) or any(
        w in ENV_SECRET_WORDS or any(p in w for p in ENV_SECRET_PARTS) for w in words
    )


def secret_value(text: str) -> bool:
    """A value shaped like a secret: ``Bearer ...``, a URL with userinfo, a PEM block, a long run of hex
    (32+) or of mixed-case base64 with digits (24+; a UUID with its dashes is none)."""
    return any(p.search(text) for p in _SECRET_SHAPES)


def env_digests(env: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each variable as ``{"sha256": ...}`` (what is compared), with ``"value"`` only where neither its
    name nor its value looks secret; ``"hidden"`` says why a value is not shown."""
    out: dict[str, dict[str, str]] = {}
    for name, value in sorted(env.items()):
        entry = {"sha256": hashlib.sha256(value.encode(errors="surrogateescape")).hexdigest()}
        if secret_env_name(name):
            entry["hidden"] = "named like a secret"
        elif secret_value(value):
            entry["hidden"] = "shaped like a secret"
        else:
            entry["value"] = value
        out[name] = entry
    return out


def _forms(secret: str) -> set[str]:
    """``secret`` as it may come back: itself, URL-quoted, and base64 (standard and URL-safe, with its padding
    and without, so that the form is found inside a longer base64 text too; the longest is replaced first)."""
    raw = secret.encode(errors="surrogateescape")
    encoded = {base64.b64encode(raw), base64.urlsafe_b64encode(raw)}
    return {
        secret,
        quote(secret, safe=""),
        *(e.decode() for e in encoded),
        *(e.decode().rstrip("=") for e in encoded),
    }


def remember(*secrets: str | None, basic: tuple[str, str] | None = None) -> None:
    """Secrets seatrial holds, to be replaced wherever they appear in text it writes (:func:`redact_text`):
    an API key it sends, a password; ``basic``: URL credentials sent as ``Basic base64(user:password)``
    (the password and the whole token are remembered). Values shorter than :data:`MIN_KNOWN_CHARS` are
    left to the shape rules."""
    global _known
    forms: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= MIN_KNOWN_CHARS:
            forms |= _forms(secret)
    if basic is not None:
        user, password = basic
        forms |= _forms(f"{user}:{password}")
        if len(password) >= MIN_KNOWN_CHARS:
            forms |= _forms(password)
    forms = {f for f in forms if len(f) >= MIN_KNOWN_CHARS}
    if forms - set(_known):
        with _known_lock:
            _known = tuple(sorted(set(_known) | forms, key=len, reverse=True))


def remember_authorization(value: str) -> None:
    """The credential of an ``Authorization`` header seatrial sends (``Bearer KEY`` or ``Basic base64``)."""
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(token, validate=True).decode().partition(":")
        except ValueError:  # not base64 of text: the token as it is
            remember(token)
            return
        remember(basic=(user, password))
    else:
        remember(token or value)


def remember_argv(argv: Iterable[str]) -> None:
    """The secrets of a command line (``--api-key X``, ``--api-key=X``, ``HF_TOKEN=X``): what
    :func:`redact` hides in the list, remembered so that the child's own output can be cleaned of them."""
    items = [str(a) for a in argv]
    for item, shown in zip(items, _argv(list(items)), strict=True):
        if shown == REDACTED:
            remember(item)
        elif shown != item and "=" in item:
            remember(item.partition("=")[2])


def remember_env(env: Mapping[str, str]) -> None:
    """The values of environment variables named or shaped like a secret (:func:`env_digests`'s rule)."""
    remember(*(v for k, v in env.items() if secret_env_name(k) or secret_value(v)))


def _query(match: re.Match[str]) -> str:
    name = match["name"]
    hide = secret_name(name) or name.lower() in QUERY_SECRET_NAMES
    return f"{match['lead']}{REDACTED}" if hide and match["value"] != REDACTED else match[0]


def redact_text(text: str) -> str:
    """``http://user:pw@host/x`` -> ``http://host/x`` wherever it appears; ``Bearer sk-..`` -> ``Bearer
    <redacted>`` (and ``Basic ...``); ``?token=abc`` -> ``?token=<redacted>``; every remembered secret
    (:func:`remember`) and its encoded forms -> ``<redacted>``; other text unchanged."""
    for form in _known:
        if form in text:
            text = text.replace(form, REDACTED)
    if "@" in text:
        text = _USERINFO.sub(r"\g<scheme>", text)
    if "earer" in text:
        text = _BEARER.sub(rf"\g<scheme>{REDACTED}", text)
    if "Basic" in text:
        text = _BASIC.sub(rf"\g<scheme>{REDACTED}", text)
    if "=" in text:
        text = _QUERY.sub(_query, text)
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
        if all(isinstance(x, int | float) for x in obj):  # a record's inter-token times: nothing to hide
            return list(obj)
        return _argv(list(obj))
    if isinstance(obj, str):
        return redact_text(obj)
    if hasattr(obj, "model_dump"):  # a result model: redacted as the JSON it is written as
        return redact(obj.model_dump(mode="json"))
    return obj
