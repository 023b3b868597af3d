"""Password forms on command lines and in files: ``*_PASS=``, logins' ``-p``, ``redis-cli -a`` ….

Each family is redacted in one shot and at every split point of a stream (two chunks at every
position, word by word, character by character, three chunks around the secret), and benign
look-alikes stay unchanged. Fixtures are assembled from harmless pieces so the file holds
nothing a secret scanner would flag.
"""

from __future__ import annotations

import itertools
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_adapter.safety.redact import REDACTED, is_sensitive_key, redact_text
from acp_adapter.safety.redact.stream import StreamRedactor

PW = "Pw" + "9xQ" + "7zK"  # a password-looking word
MAILGUN = "key" + "-" + "0123456789abcdef" * 2

# (text, secret that must not appear in the output, a word next to it that must survive)
CASES: list[tuple[str, str, str]] = [
    (f"DB_PASS={PW} next", PW, "DB_PASS"),
    (f"export SMTP_PASS='{PW}' next", PW, "SMTP_PASS"),
    (f"RABBITMQ_DEFAULT_PASS: {PW} next", PW, "RABBITMQ_DEFAULT_PASS"),
    (f"REDIS_PASS={PW}\nnext", PW, "REDIS_PASS"),
    (f"APP_PASSWD={PW} next", PW, "APP_PASSWD"),
    (f"MYSQL_PWD={PW} next", PW, "MYSQL_PWD"),
    (f"run tool --pass {PW} now", PW, "tool"),
    (f"run tool --password {PW} now", PW, "tool"),
    (f"docker login -u bob -p {PW} ghcr.io", PW, "ghcr.io"),
    (f"az login -u bob -p {PW} --tenant t", PW, "--tenant"),
    (f"podman login -p{PW} quay.io", PW, "quay.io"),
    (f"redis-cli -h db -a {PW} ping", PW, "ping"),
    (f"mysqladmin -u root -p{PW} status", PW, "status"),
    (f"mysqldump -u root -p{PW} app", PW, "app"),
    (f"sshpass -p {PW} ssh host", PW, "ssh"),
    (f"htpasswd -b /etc/htpw bob {PW} done", PW, "bob"),
    (f"htpasswd -nbB bob {PW} done", PW, "bob"),
    (f"openssl enc -aes256 -pass pass:{PW} -in f", PW, "-in"),
    (f"openssl rsa -passin pass:{PW} -in k", PW, "-passin"),
    (f"machine api.example.com login bob password {PW} next", PW, "bob"),
    (f"machine api.example.com\n  login bob\n  password {PW}\nnext", PW, "bob"),
    (f"db.example.com:5432:app:bob:{PW}\nnext", PW, "db.example.com:5432:app:bob:"),
    (f"*:*:*:bob:{PW}\nnext", PW, "bob"),
    (f"echo {PW} | sudo -S apt update", PW, "apt"),
    (f"echo '{PW}' | sudo -k -S ls", PW, "ls"),
    (f"sudo -S ls <<< {PW} done", PW, "ls"),
    (f"MAILGUN_KEY={MAILGUN} next", MAILGUN, "MAILGUN_KEY"),
    (f"the key is {MAILGUN} ok", MAILGUN, "the"),
    # passwords that particular programs take as their own arguments
    (f"sshpass -p{PW} ssh host", PW, "ssh"),
    (f"ansible-playbook -e ansible_become_pass={PW} site.yml", PW, "site.yml"),
    (f"ansible_ssh_pass: {PW}\nnext", PW, "ansible_ssh_pass"),
    (f"zip -P {PW} out.zip notes.txt", PW, "out.zip"),
    (f"unzip -P{PW} in.zip", PW, "in.zip"),
    (f"7z a -p{PW} out.7z dir", PW, "out.7z"),
    (f"/usr/bin/7z x -p{PW} in.7z", PW, "in.7z"),
    (f"unrar x -p{PW} in.rar", PW, "in.rar"),
    (f"keytool -list -storepass {PW} -keystore k.jks", PW, "k.jks"),
    (f"keytool -importkeystore -srcstorepass {PW} -destkeypass {PW}x -v", PW, "-v"),
    (f"jarsigner -keypass {PW} app.jar alias", PW, "app.jar"),
    (f"smbclient //srv/share -U bob%{PW} -c ls", PW, "bob%"),
    (f"rpcclient --user=bob%{PW} srv", PW, "srv"),
    (f"ldapsearch -x -D cn=admin -w {PW} -b dc=x", PW, "dc=x"),
    (f"ldappasswd -x -D cn=admin -w {PW} -s {PW}n uid=bob", PW, "uid=bob"),
    (f"sqlcmd -S srv -U sa -P {PW} -Q 'select 1'", PW, "srv"),
    (f"bcp db.t out f.dat -U sa -P{PW} -c", PW, "f.dat"),
    (f"plink -ssh bob@host -pw {PW} uptime", PW, "uptime"),
    (f"pscp -pw {PW} f.txt bob@host:", PW, "f.txt"),
    (f"deploy --db-pass {PW} now", PW, "deploy"),
    (f"deploy --db-pass={PW} now", PW, "deploy"),
    (f"tool --pw {PW} now", PW, "tool"),
    (f"tool --pw={PW} now", PW, "tool"),
    (f"chpasswd <<< bob:{PW}", PW, "bob"),
    (f"echo 'bob:{PW}' | chpasswd", PW, "chpasswd"),
    (f"echo {PW} | passwd --stdin bob", PW, "bob"),
    (f"nmcli dev wifi connect Home password {PW} ifname wlan0", PW, "wlan0"),
    (f"nmcli con modify home wifi-sec.psk {PW}", PW, "home"),
    (f"wpa_passphrase HomeNet {PW}", PW, "HomeNet"),
    (f"net use Z: \\\\srv\\share {PW} /user:bob", PW, "/user:bob"),
    (f"net use \\\\srv\\share /user:bob {PW}", PW, "/user:bob"),
    (f"net user bob {PW} /add", PW, "/add"),
    (f"MY_SERVICE_KEY={MAILGUN[4:]}x next", MAILGUN[4:], "MY_SERVICE_KEY"),
    ("PUSHER_APP_KEY=" + "a1b2c3d4" * 4 + " next", "a1b2c3d4" * 4, "PUSHER_APP_KEY"),
]

BENIGN = [
    "mysql -u root -p app",
    "mysql -p dbname",
    "ps -p 123",
    "ssh -p 22 host",
    "redis-cli -h host -p 6379 ping",
    "rsync --pass-through x",
    "git diff --pass-through",
    "first_pass=2 bypass=1",
    "a key-value store",
    "key-0123 short",
    "The file .pgpass holds lines of the form hostname:port:database:username:password",
    "fe80:0:0:0:1 and 12:30:45",
    "fe80:0:0:0:1",
    "see db:5432:app:bob:word in the middle of a sentence",
    "login with your password now",
    "echo hi | sudo tee /etc/x",
    "sudo -s",
    "htpasswd -c /etc/htpw bob",
    "openssl rsa -passin env:KEYPASS -in k",
    "openssl rsa -passin file:/run/pw -in k",
    "echo $PW | sudo -S ls",
    "docker login -u bob -p $REGISTRY_TOKEN ghcr.io",
    "did the tests pass",
    "SORT_KEY=name",
    "CACHE_KEY=user_profile_settings_v2_2024_final",
    "S3_KEY=uploads/2024/03/report-final.pdf",
    "PRIMARY_KEY=id",
    "first_pass=2 second_pass=3",
    "unzip -p in.zip file.txt",
    "zip -r out.zip dir",
    "7z a -p out.7z dir",
    "7z x in.7z -o/tmp/out",
    "keytool -list -storepass:env STOREPASS -keystore k.jks",
    "ldapsearch -x -W -b dc=x",
    "sqlcmd -S srv -E -Q 'select 1'",
    "sort -P 4 file",
    "smbclient -L srv -U bob",
    "net use Z: \\\\srv\\share /user:bob",
    "net use Z: \\\\srv\\share * /user:bob",
    "net view",
    "nmcli con show",
    "nmcli con modify home wifi-sec.psk-flags 1",
    "wpa_passphrase HomeNet",
    "chpasswd < users.txt",
    "tool --pw-file /run/pw",
    "pwm and pwn are words",
]


def _stream(chunks: list[str]) -> str:
    redactor = StreamRedactor()
    return "".join(redactor.feed(c) for c in chunks) + redactor.flush()


@pytest.mark.parametrize(("text", "secret", "survivor"), CASES, ids=[c[0][:30] for c in CASES])
def test_family_is_redacted_and_idempotent(text: str, secret: str, survivor: str) -> None:
    out = redact_text(text)
    assert secret not in out and REDACTED in out, out
    assert survivor in out
    assert redact_text(out) == out


@pytest.mark.parametrize("text", BENIGN)
def test_benign_look_alikes_are_unchanged(text: str) -> None:
    assert redact_text(text) == text


def test_env_pass_names_are_sensitive_keys_and_english_ones_are_not() -> None:
    for name in ("DB_PASS", "SMTP_PASS", "RABBITMQ_DEFAULT_PASS", "pass", "--pass", "ansible_become_pass"):
        assert is_sensitive_key(name), name
    for name in ("--db-pass", "smtp_pass", "pw", "--pw", "wpa_psk"):
        assert is_sensitive_key(name), name
    for name in ("first_pass", "bypass", "pass-through", "compass", "passes"):
        assert not is_sensitive_key(name), name


@pytest.mark.parametrize(("text", "secret", "survivor"), CASES, ids=[c[0][:30] for c in CASES])
def test_every_split_point_equals_the_one_shot_redaction(text: str, secret: str, survivor: str) -> None:
    whole = redact_text(text)
    for i in range(len(text) + 1):
        assert _stream([text[:i], text[i:]]) == whole, i
    assert _stream(re.findall(r"\S+\s*|\s+", text)) == whole
    assert _stream(list(text)) == whole
    at = text.index(secret)
    for i in range(max(0, at - 10), at + len(secret) + 1):
        for j in range(i, min(len(text), at + len(secret) + 2) + 1):
            assert _stream([text[:i], text[i:j], text[j:]]) == whole, (i, j)


_PIECES = [
    " ",
    "\n",
    "\t",
    "pass",
    "DB_PASS",
    "=",
    ":",
    "'",
    "--pass",
    "--pass-through",
    "-p",
    "-a",
    "-S",
    "-b",
    "docker login",
    "redis-cli",
    "htpasswd",
    "openssl",
    "pass:",
    "machine",
    "login",
    "password",
    "sudo",
    "echo",
    "|",
    "<<<",
    "5432",
    "*",
    "key-",
    "0123456789abcdef",
    PW,
    "bob",
    REDACTED,
]


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(st.sampled_from(_PIECES) | st.text(alphabet="abc019_-.", max_size=5), max_size=30).map(
        "".join
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=10),
)
def test_random_chunkings_equal_the_one_shot_redaction(text: str, cuts: list[int]) -> None:
    whole = redact_text(text)
    assert _stream(_chunks(text, cuts)) == whole
    assert redact_text(whole) == whole


_MB = 1 << 20


@pytest.mark.parametrize(
    "unit",
    [
        "DB_PASS=",
        "pass ",
        "pass:",
        "docker login -p ",
        "redis-cli -a ",
        "htpasswd -b ",
        "machine h login u password ",
        "a:5432:b:c:",
        "1:2:3:4:5:",
        "sudo -S ",
        "echo x | sudo -S ",
        "sudo -a -b -c ",
        "7z -p",
        "zip -P ",
        "keytool -storepass ",
        "smbclient -U a%",
        "ldapsearch -w ",
        "net use ",
        "net ",
        "net user a ",
        "nmcli password ",
        "echo a:b | chpasswd ",
        "X_KEY=" + "a1" * 12 + " ",
        "--pw ",
    ],
)
def test_new_families_stay_linear(unit: str) -> None:
    text = (unit * (_MB // len(unit) + 1))[:_MB]
    start = time.thread_time()
    redact_text(text)
    assert time.thread_time() - start < 1.5, unit
