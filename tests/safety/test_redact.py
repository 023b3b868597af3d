"""Tests for the canonical secret redactor (acp_adapter.safety.redact).

Secret-looking fixtures are assembled at run time from harmless pieces (``_tok``) so that
this file never contains a string that a secret scanner would flag, while the redactor
sees exactly the shapes it must catch.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable

import pytest

from acp_adapter.safety.redact import REDACTED, is_sensitive_key, redact_text, redact_value

_ALNUM = "A1b2C3d4E5f6G7h8J9k0LmNpQrStUvWxYz"


def _tok(prefix: str, n: int, alphabet: str = _ALNUM, offset: int = 0) -> str:
    """A deterministic fake credential: ``prefix`` followed by ``n`` characters."""
    body = "".join(alphabet[(i * 7 + offset) % len(alphabet)] for i in range(n))
    return prefix + body


_HEX = "0123456789abcdef"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

GHP = _tok("gh" + "p_", 36)
GHO = _tok("gh" + "o_", 36, offset=1)
GHU = _tok("gh" + "u_", 36, offset=2)
GHS = _tok("gh" + "s_", 36, offset=3)
GHR = _tok("gh" + "r_", 36, offset=4)
GH_PAT = _tok("github" + "_pat_", 82, _ALNUM + "_")
OPENAI = _tok("s" + "k-", 48)
OPENAI_PROJ = _tok("s" + "k-proj-", 120, _ALNUM + "-_")
ANTHROPIC = _tok("s" + "k-ant-api03-", 93, _ALNUM + "-_")
AKIA = _tok("AK" + "IA", 16, _UPPER)
ASIA = _tok("AS" + "IA", 16, _UPPER, offset=5)
AWS_SECRET = _tok("", 40, _ALNUM + "/+")
XOXB = "xo" + "xb-" + "123456789012-1234567890123-" + _tok("", 24)
XOXP = "xo" + "xp-" + "123456789012-1234567890123-" + _tok("", 32, offset=2)
XOXA = "xo" + "xa-2-" + _tok("", 30, offset=3)
XOXR = "xo" + "xr-" + _tok("", 40, offset=4)
XOXS = "xo" + "xs-" + _tok("", 40, offset=6)
SLACK_HOOK_PATH = "T0000000/B0000000/" + _tok("", 24)
STRIPE_SK_LIVE = _tok("s" + "k_live_", 24)
STRIPE_SK_TEST = _tok("s" + "k_test_", 24, offset=1)
STRIPE_RK = _tok("r" + "k_live_", 24, offset=2)
STRIPE_PK = _tok("p" + "k_live_", 24, offset=3)
WHSEC = _tok("wh" + "sec_", 32)
GOOGLE_KEY = _tok("AI" + "za", 35, _ALNUM + "-_")
GOOGLE_OAUTH = _tok("ya" + "29.", 120, _ALNUM + "-_")
GLPAT = _tok("gl" + "pat-", 20, _ALNUM + "-_")
HF = _tok("h" + "f_", 34)
NPM = _tok("np" + "m_", 36)
PYPI = _tok("py" + "pi-AgEIcHlwaS5vcmc", 150, _ALNUM + "-_")
SENDGRID = _tok("S" + "G.", 22, _ALNUM + "-_") + "." + _tok("", 43, _ALNUM + "-_", offset=3)
DIGITALOCEAN = _tok("do" + "p_v1_", 64, _HEX)
TWILIO = _tok("S" + "K", 32, _HEX)
JWT = (
    "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    "." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    "." + _tok("", 43, _ALNUM + "-_")
)
PEM_BODY = "\n".join(_tok("MII", 61, _ALNUM + "+/", offset=i) for i in range(4))


def _pem(label: str, body: str = PEM_BODY, newline: str = "\n", end: bool = True) -> str:
    text = f"-----BEGIN {label}-----{newline}{body.replace(chr(10), newline)}{newline}"
    if end:
        text += f"-----END {label}-----"
    return text


# (context, secret that must disappear, text that must survive or None)
SECRET_CASES: list[tuple[str, str, str | None]] = [
    # --- HTTP headers -------------------------------------------------------------------
    (
        f'curl -s -H "Authorization: Bearer {JWT}" https://api.example.com/v1/me',
        JWT,
        "Authorization: Bearer ",
    ),
    ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy", "Authorization: Basic "),
    (
        "Proxy-Authorization: Negotiate YIIGbwYJKoZIhvcSAQICAQBuggZeMIIGWqADAgEF",
        "YIIGbwYJKoZIhvcS",
        "Negotiate",
    ),
    (f"GET /user HTTP/1.1\r\nAuthorization: token {GHP}\r\nAccept: */*\r\n", GHP, "Accept: */*"),
    (
        f'{{"headers": {{"Authorization": "Bearer {JWT}", "Accept": "json"}}}}',
        JWT,
        '"Authorization": "Bearer ',
    ),
    (
        "curl -H 'X-Api-Key: 7f3a9c1e5b2d4f60a8e1' https://api.example.com",
        "7f3a9c1e5b2d4f60a8e1",
        "X-Api-Key:",
    ),
    ("Cookie: sessionid=q8w7e6r5t4y3; csrftoken=zx9cv8bn7m", "q8w7e6r5t4y3", "Cookie:"),
    ("Set-Cookie: session=s3cr3tv4lu3; Path=/; HttpOnly; Secure", "s3cr3tv4lu3", "Set-Cookie:"),
    ("X-MCP-Auth-Token: mcp_9f8e7d6c5b4a3210", "mcp_9f8e7d6c5b4a3210", "X-MCP-Auth-Token:"),
    (
        'Authorization: Digest username="bob", response="6629fae49393a05397450978507c4ef1"',
        "6629fae49393a05397450978507c4ef1",
        "Authorization: Digest",
    ),
    # --- URLs -------------------------------------------------------------------------
    ("DATABASE_URL=postgres://app:Tr0ub4dor3@db.internal:5432/app", "Tr0ub4dor3", "postgres://app:"),
    (
        f"origin\thttps://x-access-token:{GHS}@github.com/org/repo.git (fetch)",
        GHS,
        "@github.com/org/repo.git",
    ),
    ("https://user:pa55w0rd@example.com/private/", "pa55w0rd", "https://user:"),
    ("redis://:r3d1sP4ss@cache.internal:6379/0", "r3d1sP4ss", "@cache.internal:6379/0"),
    ("GET /items?access_token=at-8f7e6d5c4b3a&page=2 HTTP/1.1", "at-8f7e6d5c4b3a", "&page=2"),
    (
        "GET /oauth/callback?code=4%2F0AY0e-g7Xq9Lm2Np&state=af0ifjsldkj",
        "4%2F0AY0e-g7Xq9Lm2Np",
        "&state=af0ifjsldkj",
    ),
    (
        "POST /token grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA"
        "&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        "code_verifier=",
    ),
    (
        "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&redirect_uri=x",
        "SplxlOBeZQQYbYS6WxSbIA",
        "code=",
    ),
    (
        "https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIDEXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
        "X-Amz-Signature=",
    ),
    (
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sig=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA%3D%3D",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
        "&sig=",
    ),
    ("GET https://api.example.com/v2/data?api_key=k3yV4lu3xyz&format=json", "k3yV4lu3xyz", "api_key="),
    (f"https://maps.googleapis.com/maps/api/geocode/json?key={GOOGLE_KEY}", GOOGLE_KEY, "?key="),
    ("POST /oauth/token?client_id=abc&client_secret=cl13ntS3cr3t", "cl13ntS3cr3t", "client_id=abc"),
    ("https://example.com/login?user=bob&password=hunter2xyz", "hunter2xyz", "user=bob"),
    (f"https://hooks.slack.com/services/{SLACK_HOOK_PATH}", SLACK_HOOK_PATH, "hooks.slack.com/services/"),
    (
        "https://discord.com/api/webhooks/123456789012345678/" + _tok("", 68, _ALNUM + "-_"),
        _tok("", 68, _ALNUM + "-_"),
        "discord.com/api/webhooks/",
    ),
    # --- secret bindings ----------------------------------------------------------------
    ("db_password_ref: secret://vault/prod/db-password", "vault/prod/db-password", "secret://"),
    ("      API_KEY: ${{ secrets.OPENAI_API_KEY }}", "${{ secrets.OPENAI_API_KEY }}", "API_KEY:"),
    ("SECRET_FOO=b4rB4zQux", "b4rB4zQux", "SECRET_FOO="),
    # --- provider token shapes in logs --------------------------------------------------
    (f"2024-05-01 DEBUG git: using {GHP} for push", GHP, "DEBUG git: using"),
    (f"oauth app token {GHO} issued", GHO, None),
    (f"user-to-server token: {GHU}", GHU, None),
    (f"installation token={GHS}", GHS, "installation token="),
    (f"refresh with {GHR}", GHR, None),
    (f"gh auth login --with-token <<< {GH_PAT}", GH_PAT, "gh auth login"),
    (
        f"openai.AuthenticationError: Incorrect API key provided: {OPENAI}",
        OPENAI,
        "Incorrect API key provided",
    ),
    (f'client = OpenAI(api_key="{OPENAI_PROJ}")', OPENAI_PROJ, "client = OpenAI(api_key="),
    (f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC, "ANTHROPIC_API_KEY="),
    (f"[default]\naws_access_key_id = {AKIA}\nregion = us-east-1", AKIA, "region = us-east-1"),
    (f'{{"Credentials": {{"AccessKeyId": "{ASIA}", "Expiration": "2024-05-01"}}}}', ASIA, "AccessKeyId"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_access_key = "),
    (f"slack: posting as {XOXB}", XOXB, "slack: posting as"),
    (f"SLACK_USER_TOKEN={XOXP}", XOXP, "SLACK_USER_TOKEN="),
    (f"legacy workspace token {XOXA}", XOXA, None),
    (f"refresh: {XOXR}", XOXR, None),
    (f"session {XOXS} expired", XOXS, "expired"),
    (f"stripe.api_key = '{STRIPE_SK_LIVE}'", STRIPE_SK_LIVE, "stripe.api_key = "),
    (f"STRIPE_KEY={STRIPE_SK_TEST} npm test", STRIPE_SK_TEST, "npm test"),
    (f"restricted key {STRIPE_RK} loaded", STRIPE_RK, "loaded"),
    (f"publishable: {STRIPE_PK}", STRIPE_PK, None),
    (f"endpoint secret {WHSEC}", WHSEC, "endpoint secret"),
    (
        f'<script src="https://maps.googleapis.com/maps/api/js?libraries=places&v={GOOGLE_KEY}">',
        GOOGLE_KEY,
        None,
    ),
    (f"google: Authorization header was {GOOGLE_OAUTH}", GOOGLE_OAUTH, None),
    (f"git clone https://oauth2:{GLPAT}@gitlab.com/group/project.git", GLPAT, "gitlab.com/group/project.git"),
    (f"huggingface-cli login --token {HF}", HF, "huggingface-cli login"),
    (f"//registry.npmjs.org/:_authToken={NPM}", NPM, "_authToken="),
    (f"[pypi]\nusername = __token__\npassword = {PYPI}", PYPI, "username = __token__"),
    (f"SENDGRID_API_KEY='{SENDGRID}'", SENDGRID, "SENDGRID_API_KEY="),
    (f"doctl auth init -t {DIGITALOCEAN}", DIGITALOCEAN, "doctl auth init"),
    (f"twilio api key sid {TWILIO} created", TWILIO, "created"),
    (f"2024-05-01T12:00:00Z DEBUG decoded session {JWT} ok", JWT, "DEBUG decoded session"),
    (
        "Traceback (most recent call last):\n"
        '  File "/app/auth.py", line 12, in verify\n'
        f"jwt.exceptions.ExpiredSignatureError: Signature has expired: {JWT}",
        JWT,
        'File "/app/auth.py", line 12, in verify',
    ),
    # --- PEM blocks -------------------------------------------------------------------
    (f"key file:\n{_pem('RSA PRIVATE KEY')}\nend of file", PEM_BODY.split("\n")[1], "end of file"),
    (_pem("OPENSSH PRIVATE KEY"), PEM_BODY.split("\n")[2], None),
    (f"ec: {_pem('EC PRIVATE KEY')}", PEM_BODY.split("\n")[0], "ec: "),
    (_pem("ENCRYPTED PRIVATE KEY"), PEM_BODY.split("\n")[3], None),
    (f"truncated output:\n{_pem('PRIVATE KEY', end=False)}", PEM_BODY.split("\n")[3], "truncated output:"),
    (
        '{"type": "service_account", "private_key": "' + _pem("PRIVATE KEY", newline="\\n") + '\\n"}',
        PEM_BODY.split("\n")[1],
        '"type": "service_account"',
    ),
    # --- generic key/value forms ------------------------------------------------------
    ("login ok password=hunter2 user=bob", "hunter2", "user=bob"),
    ("database:\n  host: db.internal\n  password: hunter2\n  port: 5432", "hunter2", "  password: "),
    ('{"api_key": "k-7d9f2a1b3c", "model": "gpt-4o"}', "k-7d9f2a1b3c", '"api_key": "'),
    (f"export GITHUB_TOKEN={GHP}", GHP, "export GITHUB_TOKEN="),
    ('DB_PASSWORD="correct horse battery staple"', "correct horse battery staple", 'DB_PASSWORD="'),
    (
        "# .env\nDEBUG=true\nDATABASE_PASSWORD=pg-pa55\nSTRIPE_SECRET=st-s3cr3t\nPORT=8080\n",
        "st-s3cr3t",
        "PORT=8080",
    ),
    ("docker run --rm -e API_TOKEN=tkn-4815162342 -p 8080:80 app:latest", "tkn-4815162342", "-p 8080:80"),
    (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/client.py", line 88, in connect\n'
        "    client = Client(api_key='ak-90210beverly', timeout=30)\n",
        "ak-90210beverly",
        "timeout=30",
    ),
    (
        "DEBUG request headers={'Authorization': 'Bearer opaque-7f6e5d4c3b2a'}",
        "opaque-7f6e5d4c3b2a",
        "'Bearer ",
    ),
    ("oauth:\n  client_secret: c1i3nt-s3cr3t\n  client_id: my-app", "c1i3nt-s3cr3t", "client_id: my-app"),
    ("claim_token=cl41m-t0k3n-0001", "cl41m-t0k3n-0001", "claim_token="),
    ('{"mcp_auth_token": "mcp-a1b2c3d4e5"}', "mcp-a1b2c3d4e5", '"mcp_auth_token": "'),
    ('{"pkce_verifier": "M25iVXpKU3puUjFaYWg3T1NDTDQtcW1ROUY5YXlwalNoc0hhakxifmZHag"}', "M25iVXpKU3pu", None),
    ('{"authorization_code": "Ac0d3-1234"}', "Ac0d3-1234", '"authorization_code": "'),
    ('{"apiKey": "cam3lK3y", "accessToken": "cam3lT0k3n"}', "cam3lK3y", '"accessToken": "'),
    ('{"accessToken": "cam3lT0k3n"}', "cam3lT0k3n", '"accessToken": "'),
    ('{"refresh_token": "rt-0987654321", "expires_in": 3600}', "rt-0987654321", '"expires_in": 3600'),
    ("mysql --password=r00tpw -u root", "r00tpw", "--password="),
    ("vault login --token s.abcdef123456 --no-print", "s.abcdef123456", "--no-print"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXlieXRlcw==;EndpointSuffix=core",
        "bXlrZXlieXRlcw==",
        "AccountName=acct;",
    ),
    ("Server=db;Database=app;User Id=sa;Password=Pa$$w0rd!;", "Pa$$w0rd!", "User Id=sa;"),
    ('args: "{\\"password\\": \\"hunter2\\", \\"user\\": \\"bob\\"}"', "hunter2", '\\"user\\": \\"bob\\"'),
    ("$password = 'php-s3cret';", "php-s3cret", "$password = "),
    ('self.secret_key = "django-insecure-abc123"', "django-insecure-abc123", "self.secret_key = "),
    ('"Client Secret": "phr4se-k3y"', "phr4se-k3y", '"Client Secret": "'),
    ("auth: Bearer opaque123token", "opaque123token", "auth: Bearer "),
]

BENIGN_CASES: list[str] = [
    "commit 3f2a9c1d5e8b7a6f4c3d2e1f0a9b8c7d6e5f4a3b",
    "HEAD is now at 3f2a9c1 fix flaky test",
    "merge 3f2a9c1d5e8b into main",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "opened /src/tokenizer/secret_sauce.py",
    'File "/home/dev/auth/token_store.py", line 42, in get_token',
    "secret_sauce.py:42: AssertionError",
    "the token expired, please log in again",
    "pass your API key in the header",
    "click the password reset link",
    "max_tokens=512",
    "token_count: 3",
    "tokens_used=900",
    '{"max_tokens": 1024, "total_tokens": 55, "input_tokens": 10, "output_tokens": 45}',
    '{"token_type": "Bearer", "expires_in": 3600}',
    "x = get_token()",
    "words = tokenize(text)",
    "token = get_token()",
    "def login(password: str) -> bool:",
    "KeyError: 'token'",
    "data: aGVsbG8gd29ybGQ=",
    "payload eyJmb28iOiJiYXIifQ== (not a JWT)",
    "released v1.2.3-rc.1 and 2024.05.01",
    "digest sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "md5: d41d8cd98f00b204e9800998ecf8427e",
    "see https://example.com/search?page=2&sort=asc",
    "https://github.com/org/repo/pull/42#discussion_r1",
    "git clone ssh://git@github.com/org/repo.git",
    "update the task-list and the desk-lamp",
    "install scikit-learn (sk-learn) first",
    "mail alice@example.com about it",
    "listening on 10.0.0.12:8080 and [::1]:8080",
    "Authorization is required to access this resource",
    "Set the Authorization header to your token.",
    "Bearer tokens are described in RFC 6750",
    "timeout=30 mode=fast keyboard=us monkey=banana",
    "status_code=200 exit code=0 passed=12 failed=0",
    "author=alice authored 3 commits",
    "x = {'key': 'value'}",
    "cache_key=user:42 primary_key=id",
    "password_min_length=12",
    "auth_url=https://example.com/oauth/authorize",
    "secretName: my-db-secret",
    "session_id=550e8400-e29b-41d4-a716-446655440000",
    "AKIA prefix identifies long-term AWS access keys",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUYz\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "if password == expected:",
    "encode(text) and decode(data) with code=utf-8",
    "const apiKey = process.env.API_KEY;",
    "const token = await getToken();",
    "password = config.db_password",
    "api_key = os.environ['OPENAI_API_KEY']",
    "if not token:\n    raise ValueError('missing token')",
    "",
]


def _ids(cases: list[tuple[str, str, str | None]]) -> list[str]:
    return [f"{i:02d}-{c[0][:24]!r}" for i, c in enumerate(cases)]


@pytest.mark.parametrize(("context", "secret", "survivor"), SECRET_CASES, ids=_ids(SECRET_CASES))
def test_secret_is_redacted(context: str, secret: str, survivor: str | None) -> None:
    assert secret in context  # the fixture itself is sane
    out = redact_text(context)
    assert secret not in out, out
    assert REDACTED in out
    if survivor is not None:
        assert survivor in out, out


def test_secret_table_is_large_enough() -> None:
    assert len(SECRET_CASES) >= 60
    assert len(BENIGN_CASES) >= 40


@pytest.mark.parametrize("text", BENIGN_CASES)
def test_benign_text_is_unchanged(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize("context", [c[0] for c in SECRET_CASES], ids=_ids(SECRET_CASES))
def test_idempotent_on_secrets(context: str) -> None:
    once = redact_text(context)
    assert redact_text(once) == once


def test_exact_label_forms() -> None:
    assert redact_text("Authorization: Bearer abc.def-123") == f"Authorization: Bearer {REDACTED}"
    assert redact_text("password=hunter2") == f"password={REDACTED}"
    assert redact_text('{"api_key": "k123"}') == f'{{"api_key": "{REDACTED}"}}'
    assert redact_text("https://user:pw123@host/") == f"https://user:{REDACTED}@host/"
    assert redact_text("/cb?access_token=abc123&x=1") == f"/cb?access_token={REDACTED}&x=1"
    assert redact_text(f"token: {GHP}") == f"token: {REDACTED}"
    assert redact_text(_pem("RSA PRIVATE KEY")) == REDACTED


def test_unterminated_pem_redacts_to_end() -> None:
    text = "before\n" + _pem("OPENSSH PRIVATE KEY", end=False) + "\nlots of trailing output"
    assert redact_text(text) == "before\n" + REDACTED


def test_multiple_secrets_in_one_line_all_go() -> None:
    line = f"token={GHP} other={OPENAI} url=https://u:p4ss@h/ cookie: a=b"
    out = redact_text(line)
    for secret in (GHP, OPENAI, "p4ss", "a=b"):
        assert secret not in out
    assert "url=https://u:" in out


def test_non_ascii_text_keeps_offsets() -> None:
    text = "İstanbul ünïcödé password=hunter2 ✓ token: abc123 ende"
    out = redact_text(text)
    assert out == f"İstanbul ünïcödé password={REDACTED} ✓ token: {REDACTED} ende"


# --- redact_value -------------------------------------------------------------------------


def test_redact_value_nested() -> None:
    value = {
        "password": 12345,
        "api_key": None,
        "token": {"nested": "whatever"},
        "max_tokens": 512,
        "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
        "token_count": 3,
        "tokens_used": 9,
        "headers": {"Authorization": "Bearer abc", "Accept": "application/json"},
        "items": [{"clientSecret": "s"}, f"use {GHP}", 7, True],
        "pair": ("plain", {"pwd": 1.5}),
        "note": "password=hunter2 in a string",
        GHP: "keyed by a token",
        3: "non-string key",
    }
    original = copy.deepcopy(value)
    out = redact_value(value)
    assert value == original  # input untouched
    assert out["password"] == REDACTED
    assert out["api_key"] == REDACTED
    assert out["token"] == REDACTED
    assert out["max_tokens"] == 512
    assert out["usage"] == {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
    assert out["token_count"] == 3
    assert out["tokens_used"] == 9
    assert out["headers"] == {"Authorization": REDACTED, "Accept": "application/json"}
    assert out["items"] == [{"clientSecret": REDACTED}, f"use {REDACTED}", 7, True]
    assert out["pair"] == ("plain", {"pwd": REDACTED})
    assert isinstance(out["pair"], tuple)
    assert out["note"] == f"password={REDACTED} in a string"
    assert GHP not in out and out[REDACTED] == "keyed by a token"
    assert out[3] == "non-string key"


def test_redact_value_scalars_and_copies() -> None:
    assert redact_value(42) == 42
    assert redact_value(None) is None
    assert redact_value(3.5) == 3.5
    assert redact_value(f"x {GHP}") == f"x {REDACTED}"
    data = [{"a": [1, 2]}]
    out = redact_value(data)
    assert out == data and out is not data and out[0] is not data[0]


def test_redact_value_deep_nesting_does_not_raise() -> None:
    deep: object = "leaf"
    for _ in range(5000):
        deep = [deep]
    out = redact_value(deep)
    assert out is not None


# --- is_sensitive_key --------------------------------------------------------------------

SENSITIVE_KEYS = [
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "api_key",
    "apikey",
    "api-key",
    "apiKey",
    "APIKey",
    "X-Api-Key",
    "private_key",
    "privateKey",
    "access_key",
    "aws_secret_access_key",
    "client_secret",
    "clientSecret",
    "auth",
    "Authorization",
    "Proxy-Authorization",
    "credential",
    "credentials",
    "cookie",
    "Set-Cookie",
    "session_token",
    "refresh_token",
    "accessToken",
    "bearer",
    "code_verifier",
    "pkceVerifier",
    "claim_token",
    "mcp.auth.token",
    "GITHUB_TOKEN",
    "db.password",
    "passphrase",
    "auth_code",
]
HARMLESS_KEYS = [
    "max_tokens",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "token_count",
    "tokens_used",
    "maxTokens",
    "tokenCount",
    "token_type",
    "tokenizer",
    "author",
    "keyboard",
    "monkey",
    "key",
    "primary_key",
    "public_key",
    "status_code",
    "session_id",
    "path",
    "name",
    "token_url",
    "secret_name",
    "password_file",
    "",
]


@pytest.mark.parametrize("name", SENSITIVE_KEYS)
def test_sensitive_keys(name: str) -> None:
    assert is_sensitive_key(name)


@pytest.mark.parametrize("name", HARMLESS_KEYS)
def test_harmless_keys(name: str) -> None:
    assert not is_sensitive_key(name)


def test_is_sensitive_key_on_odd_input() -> None:
    assert is_sensitive_key("password_" + "x" * 1_000_000)  # judged by its head, no blow-up
    assert not is_sensitive_key("x" * 1_000_000)
    assert not is_sensitive_key(None)  # type: ignore[arg-type]


_EXTRA_KEYS = [
    "tokenString",
    "myTokenSalt",
    "apiKeyId",
    "AWS_SECRET_ACCESS_KEY",
    "SharedAccessKey",
    "X_AUTH_TOKEN",
    "client-secret",
    "idToken",
    "otp_code",
    "mfaCode",
    "sessionKey",
    "db__password",
    "oauth_token",
    "bearerToken",
    "credentialsJson",
    "password_hash",
    "authority",
    "authenticated",
    "passed",
    "bypass",
    "tokens",
    "tokensUsed",
    "decode",
    "exit_code",
    "signal",
    "signature",
    "key_id",
]


@pytest.mark.parametrize("key", [k for k in SENSITIVE_KEYS + HARMLESS_KEYS + _EXTRA_KEYS if k])
def test_free_text_forms_agree_with_is_sensitive_key(key: str) -> None:
    # The text scanner pre-filters keys for speed; it must never disagree with the
    # classifier that redact_value and the tool previews use.
    for form in (f"{key}=v4lue123", f'"{key}": "v4lue123"', f"{key}: v4lue123"):
        assert ("v4lue123" not in redact_text(form)) == is_sensitive_key(key), form


# --- linear time -------------------------------------------------------------------------

_MB = 1_000_000


def _fill(unit: str, size: int = _MB) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _mixed_no_newline() -> str:
    rng = random.Random(99)
    pieces = ["token", "=", ":", " ", '"', "eyJ", "://", "-", "a", "Bearer "]
    return "".join(rng.choice(pieces) for _ in range(_MB // 3))


# Built on demand: ~30 MB of strings are not worth holding for the whole session.
ADVERSARIAL: dict[str, Callable[[], str]] = {
    "a-run": lambda: "a" * _MB,
    "equals-run": lambda: "=" * _MB,
    "dash-run": lambda: "-" * _MB,
    "eyJ-run": lambda: _fill("eyJ"),
    "jwt-like-segments": lambda: _fill("eyJaaaaaaaaaaaa."),
    "bearer-run": lambda: _fill("Bearer "),
    "bearer-digits": lambda: _fill("Bearer 1234567a "),
    "scheme-run": lambda: _fill("://"),
    "url-creds-no-at": lambda: "x://u:" + "p" * _MB,
    "begin-run": lambda: _fill("-----BEGIN"),
    "begin-private-run": lambda: _fill("-----BEGIN RSA PRIVATE KEY-----"),
    "key-eq-run": lambda: _fill("key="),
    "token-eq-run": lambda: _fill("token="),
    "token-run": lambda: _fill("token"),
    "token-space-run": lambda: _fill("token "),
    "tokens-eq-run": lambda: _fill("tokens="),
    "dense-assignments": lambda: _fill("token=1 "),
    "dense-yaml": lambda: _fill("password: "),
    "dense-json": lambda: _fill('"token": "x", '),
    "dense-json-tight": lambda: _fill('"token":"'),
    "dense-escaped-json": lambda: _fill('\\"token\\": '),
    "dense-query": lambda: _fill("&sig="),
    "dense-flags": lambda: _fill("--token "),
    "dense-headers": lambda: _fill("x-api-key: "),
    "password-no-value": lambda: _fill("password=\n"),
    "open-quote-value": lambda: 'password="' + "a" * _MB,
    "long-bare-value": lambda: "token=" + "a" * _MB,
    "long-header-line": lambda: "Authorization: Bearer " + "b" * _MB,
    "ghp-run": lambda: _fill("ghp_"),
    "ghp-long": lambda: "ghp_" + "a" * _MB,
    "sk-long": lambda: "sk-" + "a1" * (_MB // 2),
    "quotes": lambda: '"' * _MB,
    "backslashes": lambda: "\\" * _MB,
    "mixed-no-newline": _mixed_no_newline,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_input_is_linear(name: str) -> None:
    text = ADVERSARIAL[name]()
    # CPU time of this thread, not wall time: the guard is about the work the redactor does,
    # and must not fail because a shared machine kept this process waiting for a core.
    start = time.thread_time()
    out = redact_text(text)
    elapsed = time.thread_time() - start
    assert isinstance(out, str)
    # Complexity guard with a wide margin: these take ~0.02-0.7 s; quadratic behaviour
    # would take minutes.
    assert elapsed < 1.0, f"{name}: {elapsed:.2f}s"


# --- fuzz-ish properties ------------------------------------------------------------------

_FUZZ_PIECES = [
    "token",
    "password",
    "api_key",
    "Authorization",
    "Bearer ",
    "Basic ",
    "Cookie",
    ":",
    "=",
    "==",
    " ",
    "\t",
    "\n",
    '"',
    "'",
    "\\",
    "`",
    "-",
    "--",
    "_",
    ".",
    "/",
    "@",
    "?",
    "&",
    "#",
    ";",
    ",",
    "(",
    "[",
    "{",
    "}",
    "$",
    "${{",
    "}}",
    "://",
    "https://",
    "u:p@",
    "eyJ",
    "ghp_",
    "sk-",
    "AKIA",
    "xoxb-",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "abc",
    "XYZ",
    "123",
    "null",
    "İ",
    "é",
    "\u2028",
    REDACTED,
    "[",
    "]",
]


def _fuzz_strings(count: int) -> list[str]:
    rng = random.Random(1234)
    out: list[str] = []
    for _ in range(count):
        parts: list[str] = []
        for _ in range(rng.randrange(1, 40)):
            r = rng.random()
            if r < 0.6:
                parts.append(rng.choice(_FUZZ_PIECES))
            elif r < 0.8:
                parts.append("".join(rng.choice(_ALNUM) for _ in range(rng.randrange(1, 50))))
            elif r < 0.9:
                parts.append(rng.choice(SECRET_CASES)[0])
            else:
                parts.append(chr(rng.randrange(0, 0x3000)))
        out.append("".join(parts))
    return out


def test_fuzz_never_raises_and_is_idempotent() -> None:
    for text in _fuzz_strings(3000):
        once = redact_text(text)
        assert isinstance(once, str)
        assert redact_text(once) == once, (text, once)


def test_short_input_screen_misses_nothing() -> None:
    # Short strings take a one-regex screen; padding a string past the screen's length
    # limit (after a newline, which every value stops at) must not change its redaction.
    pad = "\n" + "." * 600
    for text in _fuzz_strings(800):
        if len(text) >= 500 or "-----BEGIN" in text:
            continue
        assert redact_text(text + pad) == redact_text(text) + pad, text
