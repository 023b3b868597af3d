"""Key classifier: which names (``DB_PASSWORD``, ``apiKey``, ``x-auth-token``) label a secret.

One vocabulary for every pass and for :func:`redact_value`'s dict keys, so every surface hides
the same settings.
"""

from __future__ import annotations

import re
from typing import Final

# ---------------------------------------------------------------------------------------
# Key classifier
# ---------------------------------------------------------------------------------------

# Words that name a secret on their own, after camelCase / separator splitting.
_SECRET_WORDS: Final = frozenset(
    {
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
        "passwd",
        "pwd",
        "pw",
        "psk",
        "passphrase",
        "apikey",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "setcookie",
        "bearer",
        "verifier",
        "requirepass",
        "masterauth",
        "authorisation",
    }
)
# Lower-case glued spellings (``accesstoken``, ``XAPIKEY``, ``dbpassword``) end like this.
_SECRET_SUFFIXES: Final = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "signingkey",
    "credential",
    "credentials",
    "cookie",
    "verifier",
)
# ``<qualifier>_key`` is a secret (``api_key``); a bare ``key`` or ``primary_key`` is not.
_KEY_QUALIFIERS: Final = frozenset(
    {
        "api",
        "private",
        "access",
        "secret",
        "session",
        "signing",
        "sign",
        "master",
        "encryption",
        "encrypt",
        "account",
        "client",
        "shared",
        "app",
        "license",
        "licence",
        "ssh",
        "deploy",
        "hmac",
        "webhook",
        "admin",
        "service",
        "subscription",
        "storage",
        "consumer",
    }
)
# ``<qualifier>_code`` is a secret (``auth_code``); ``status_code`` / ``exit_code`` are not.
_CODE_QUALIFIERS: Final = frozenset(
    {"auth", "oauth", "verification", "otp", "mfa", "totp", "recovery", "backup", "device"}
)
# A key that counts, sizes or types something is metadata about tokens, not a token:
# ``max_tokens``, ``token_count``, ``token_type``.  Any of these words clears the key.
_COUNT_WORDS: Final = frozenset(
    {
        "count",
        "counts",
        "limit",
        "limits",
        "max",
        "min",
        "num",
        "number",
        "total",
        "used",
        "usage",
        "budget",
        "length",
        "len",
        "size",
        "ttl",
        "expiry",
        "expires",
        "expiration",
        "expired",
        "lifetime",
        "type",
        "kind",
        "remaining",
        "estimate",
    }
)
# A key that *points at* a secret rather than holding it (``token_url``, ``secret_name``,
# ``password_file``, ``api_key_env``) keeps its value, judged by its last word.
_HARMLESS_TAIL: Final = frozenset(
    {
        "url",
        "uri",
        "urls",
        "endpoint",
        "path",
        "paths",
        "file",
        "filename",
        "dir",
        "directory",
        "name",
        "names",
        "env",
        "var",
        "variable",
        "scope",
        "scopes",
        "method",
        "methods",
        "policy",
        "required",
        "enabled",
        "disabled",
        "provider",
        "source",
        "ref",
        "prefix",
        "hint",
        "format",
        "label",
        "mode",
        "helper",
        "stdin",
    }
)
_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# Key kinds: how the value after a sensitive key is delimited in free text.
_NOT_SECRET: Final = 0
_PLAIN: Final = 1  # one token: ``password=hunter2``
_AUTH_HEADER: Final = 2  # rest of the header, keeping the scheme: ``Bearer [REDACTED]``
_WHOLE_HEADER: Final = 3  # rest of the header: ``Cookie: [REDACTED]``

_MAX_KEY_CLASSIFY: Final = 256


def _words(name: str) -> list[str]:
    """Split ``XApiKey`` / ``x-api-key`` / ``X_API_KEY`` alike into lower-case words."""
    return [w.lower() for w in _WORD_RE.findall(name)]


def _names_secret(words: list[str], *, plurals: bool = False) -> bool:
    """True if the words of a name use the secret vocabulary above (the one list)."""
    for i, word in enumerate(words):
        prev = words[i - 1] if i else ""
        if plurals and len(word) > 3 and word.endswith("s") and word not in _SECRET_WORDS:
            word = word[:-1]  # ``tokens_used``, ``secrets``: still about a secret
        if (
            word in _SECRET_WORDS
            or word.endswith(_SECRET_SUFFIXES)
            or (word == "key" and prev in _KEY_QUALIFIERS)
            or (word == "code" and prev in _CODE_QUALIFIERS)
        ):
            return True
    return False


_ENV_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]{0,127}")


# ``<whose>_pass`` in lower case names a password when the word before says whose or what for:
# ``ansible_become_pass``, ``--db-pass``, ``smtp_pass``; ``first_pass`` and ``second-pass`` stay.
_PASS_OWNERS: Final = frozenset(
    {
        "become",
        "sudo",
        "su",
        "ssh",
        "db",
        "database",
        "admin",
        "root",
        "user",
        "login",
        "smtp",
        "mail",
        "imap",
        "pop",
        "ftp",
        "sftp",
        "ldap",
        "bind",
        "proxy",
        "vault",
        "key",
        "store",
        "keystore",
        "truststore",
        "wifi",
        "vpn",
        "api",
        "auth",
        "master",
        "redis",
        "mysql",
        "pg",
        "postgres",
        "rabbitmq",
        "amqp",
        "sasl",
        "http",
        "basic",
        "registry",
        "docker",
        "account",
        "conn",
        "connection",
        "client",
        "server",
        "service",
        "app",
        "web",
        "winrm",
        "rdp",
        "vnc",
        "wpa",
        "pfx",
        "cert",
    }
)


def _names_pass(name: str, words: list[str]) -> bool:
    """``pass`` is a secret word only where it cannot be English: alone (``--pass X``,
    ``pass: X``), ending an environment-style name (``DB_PASS``, ``RABBITMQ_DEFAULT_PASS``), or after
    a word that says whose password it is (``ansible_become_pass``, ``--db-pass``).
    ``first_pass``, ``bypass`` and ``--pass-through`` stay plain."""
    if len(words) == 1:
        return True
    if words[-2] in _PASS_OWNERS:
        return True
    return _ENV_NAME.fullmatch(name.lstrip("-")) is not None and name.endswith("_PASS")


def _key_kind(name: str) -> int:
    """Classify a key by its words (uncached; see _kind_cached)."""
    words = _words(name)
    if words and words[-1] == "pass" and _names_pass(name, words):
        return _PLAIN
    if not words or not _names_secret(words):
        return _NOT_SECRET
    if words[-1] in _HARMLESS_TAIL or any(w in _COUNT_WORDS for w in words):
        return _NOT_SECRET
    last = words[-1]
    if last == "authorization":
        return _AUTH_HEADER
    if last in ("cookie", "cookies", "setcookie"):
        return _WHOLE_HEADER
    return _PLAIN


_KIND_CACHE: dict[str, int] = {}
_KIND_CACHE_MAX: Final = 8192


def _kind_cached(name: str) -> int:
    """Classify a key once; keys repeat endlessly in logs, and a dict hit is the cheapest
    operation available on the hot path (cheaper than ``functools.lru_cache``)."""
    kind = _KIND_CACHE.get(name)
    if kind is None:
        # Keys longer than any real one are judged by their head so that a megabyte-long
        # dict key costs no more than a short one; they are not worth caching.
        kind = _key_kind(name[:_MAX_KEY_CLASSIFY])
        if len(name) <= _MAX_KEY_CLASSIFY:
            if len(_KIND_CACHE) >= _KIND_CACHE_MAX:
                _KIND_CACHE.clear()
            _KIND_CACHE[name] = kind
    return kind


def is_sensitive_name(name: str) -> bool:
    """Tell whether a field *named* ``name`` must never be shown in a preview.

    The same vocabulary as :func:`is_sensitive_key` (there is one list of secret words), read
    more strictly: count-like keys and pointers to secrets (``tokens_used``, ``token_url``) are
    sensitive here too, because a preview that is wrongly withheld costs a label while a preview
    that shows a secret leaks it. Every name :func:`is_sensitive_key` flags is flagged here, so a
    card title can never show a value that the same card's ``rawInput`` hides.
    """
    if not isinstance(name, str) or not name:
        return False
    return _names_secret(_words(name[:_MAX_KEY_CLASSIFY]), plurals=True)


def is_sensitive_key(name: str) -> bool:
    """Tell whether a field or parameter *named* ``name`` holds a secret.

    Public because every place that shows structured data (tool previews, redact_value,
    free-text ``key=value`` forms) must agree on one vocabulary.  Matching is on words,
    not substrings, so ``tokenizer``, ``author``, ``keyboard`` and ``monkey`` are not
    secrets while ``accessToken``, ``X-Api-Key`` and ``DB_PASSWORD`` are.  Count-like
    keys (``max_tokens``, ``token_count``) and pointers to secrets (``token_url``,
    ``secret_name``) are not sensitive: hiding them would only hide useful metadata.
    """
    if not isinstance(name, str) or not name:
        return False
    return _kind_cached(name) != _NOT_SECRET
