"""Throughput benchmark and leak check for :func:`acp_adapter.safety.redact.redact_text`.

Builds a deterministic ~10 MB log that looks like what an agent session produces
(timestamps, paths, SHAs, UUIDs, URLs, JSON, stack traces) with about 1% of the lines
carrying a secret of one of the shapes the redactor knows.  Prints the redactor's
throughput next to a trivial ``str.replace`` over the same text, because the ratio of
the two is what stays comparable across machines and noisy runs.  Exits non-zero if any
planted secret survives redaction, or if any ordinary line comes out changed.

Run from the project root: ``python scripts/bench_redact.py`` (``--help`` for the options:
``--repeats``, ``--stream`` to also time :class:`~acp_adapter.safety.redact.stream.StreamRedactor` fed
the same log in small chunks and check its output equals the one-shot redaction).

Before/after a change: ``--against TREE`` times another checkout of the project (its
``acp_adapter`` package, e.g. a ``git archive`` of an older commit; the pre-layout module names
``acp_adapter.redact``/``stream_redact`` are understood) on the same log in paired rounds: two
worker processes, one per checkout, alternate round by round, so the ratio within a round is
free of the machine's load drifting between rounds. Times are CPU time of each worker.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: the checkout whose redactor is timed: this one, or BENCH_REDACT_ROOT (the ``--against`` worker)
ROOT = Path(os.environ.get("BENCH_REDACT_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Decided by the files, not by trying the import: with the project installed in editable mode, a
# module missing from ROOT would be found in the installed checkout instead (a mixed import).
if (ROOT / "acp_adapter" / "safety" / "redact").is_dir():
    from acp_adapter.safety.redact import REDACTED, redact_text
    from acp_adapter.safety.redact.stream import StreamRedactor
else:  # a checkout from before the layer packages (a baseline measured with this same script)
    from acp_adapter.redact import REDACTED, redact_text  # type: ignore[no-redef]
    from acp_adapter.stream_redact import StreamRedactor  # type: ignore[no-redef]

from paired_rounds import round_ratios  # noqa: E402

TARGET_BYTES = 10 * 1024 * 1024
SECRET_LINE_RATE = 0.01
REPEATS = 3
STREAM_CHUNK = 40  # characters per streamed chunk, about what a model's answer delta carries


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def _secret_line(rng: random.Random, ts: str) -> tuple[str, str]:
    """Return (log line, the secret substring that must not survive)."""
    kind = rng.randrange(23)
    if kind == 0:
        s = "ghp_" + _rand(rng, ALNUM, 36)
        return f"{ts} DEBUG git: using token {s} for push", s
    if kind == 1:
        s = "sk-proj-" + _rand(rng, B64URL, 40) + "9"
        return f'{ts} INFO config loaded {{"openai_api_key": "{s}", "model": "gpt-4o"}}', s
    if kind == 2:
        s = "AKIA" + _rand(rng, string.ascii_uppercase + string.digits, 16)
        return f"{ts} WARN aws: access key {s} is about to expire", s
    if kind == 3:
        s = _rand(rng, ALNUM + "/+", 40)
        return f"{ts} DEBUG env aws_secret_access_key={s}", s
    if kind == 4:
        s = "xoxb-" + _rand(rng, string.digits, 12) + "-" + _rand(rng, ALNUM, 24)
        return f"{ts} INFO slack: posting with {s}", s
    if kind == 5:
        head = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
        s = head + "." + "eyJ" + _rand(rng, B64URL, 40) + "." + _rand(rng, B64URL, 43)
        return f'{ts} DEBUG http: curl -H "Authorization: Bearer {s}" https://api.example.com/v1/me', s
    if kind == 6:
        s = _rand(rng, ALNUM, 24)
        return f"{ts} INFO db: connecting to postgres://app:{s}@db.internal:5432/app", s
    if kind == 7:
        s = _rand(rng, ALNUM, 20)
        return f"{ts} INFO oauth callback GET /callback?code={s}&state=xyz", s
    if kind == 8:
        s = "sk_live_" + _rand(rng, ALNUM, 24)
        return f"{ts} ERROR stripe: request failed api_key={s}", s
    if kind == 9:
        s = "AIza" + _rand(rng, B64URL, 35)
        return f"{ts} DEBUG maps: GET https://maps.googleapis.com/maps/api/geocode/json?key={s}", s
    if kind == 10:
        s = "glpat-" + _rand(rng, B64URL, 20)
        return f"{ts} INFO export GITLAB_TOKEN={s}", s
    if kind == 11:
        s = _rand(rng, ALNUM, 16)
        return f"{ts} DEBUG yaml:   password: {s}", s
    if kind == 12:
        s = "hf_" + _rand(rng, ALNUM, 34)
        return f"{ts} INFO hub: docker run -e HF_TOKEN={s} image:latest", s
    if kind == 13:
        s = _rand(rng, ALNUM, 32)
        return f"{ts} DEBUG http: Cookie: sessionid={s}; theme=dark", s
    if kind == 14:
        s = "npm_" + _rand(rng, ALNUM, 36)
        return f"{ts} INFO npm: //registry.npmjs.org/:_authToken={s}", s
    if kind == 15:
        s = "glpat-" + _rand(rng, B64URL, 20)
        return f"{ts} INFO git remote: https://oauth2:{s}@gitlab.com/group/repo.git", s
    return _hard_secret_line(rng, ts, kind)


def _hard_secret_line(rng: random.Random, ts: str, kind: int) -> tuple[str, str]:
    """The forms that are hardest to spot: claim tokens, AWS keys in prose, command-line credentials."""
    pw = "P" + _rand(rng, ALNUM, 14) + "9"
    if kind == 16:
        s = "agh_claim_" + _rand(rng, B64URL, 40)
        return f"{ts} DEBUG run: agh task release T-{rng.randrange(99)} --claim {s}", s
    if kind == 17:
        s = "r8Vq" + _rand(rng, ALNUM + "/+", 36)
        return f"{ts} INFO note: the aws secret key is {s} (rotate it monthly)", s
    if kind == 18:
        return f"{ts} DEBUG exec: curl -u deploy:{pw} https://ci.example.com/api/json", pw
    if kind == 19:
        return f"{ts} DEBUG exec: mysql -h db.internal -u root -p{pw} app < dump.sql", pw
    if kind == 20:
        return f"{ts} DEBUG exec: sshpass -p {pw} ssh deploy@10.0.0.7 uptime", pw
    if kind == 21:
        return f"{ts} DEBUG exec: echo {pw} | docker login --password-stdin -u bot ghcr.io", pw
    return f"{ts} DEBUG exec: redis-cli config set password {pw}", pw


def _ordinary_line(rng: random.Random, ts: str) -> str:
    kind = rng.randrange(10)
    sha = _rand(rng, HEX, 40)
    uid = "-".join(_rand(rng, HEX, n) for n in (8, 4, 4, 4, 12))
    num = rng.randrange(1000)
    if kind == 0:
        url = f"https://api.example.com/v1/items?page={num % 50}&sort=asc"
        return f"{ts} INFO http: GET {url} 200 {num}ms"
    if kind == 1:
        return f"{ts} DEBUG git: checked out {sha} (HEAD -> main) in /home/dev/src/project"
    if kind == 2:
        return (
            f'{ts} INFO {{"event": "tool_call", "id": "{uid}", "tool": "read_file", '
            f'"path": "/src/tokenizer/secret_sauce.py", "bytes": {num * 977}}}'
        )
    if kind == 3:
        return (
            f'{ts} INFO {{"model": "claude", "usage": {{"input_tokens": {num * 9}, '
            f'"output_tokens": {num}}}, "max_tokens": 4096}}'
        )
    if kind == 4:
        return f'  File "/usr/lib/python3.11/site-packages/httpx/_client.py", line {num}, in send'
    if kind == 5:
        return f"{ts} WARN retry {num % 5}/5 after timeout=30 mode=fast (exit code {num % 3})"
    if kind == 6:
        return f"{ts} INFO build: sha256:{_rand(rng, HEX, 64)} pushed as v1.{num % 30}.{num % 9}"
    if kind == 7:
        return f"{ts} DEBUG session {uid} from 10.0.{num % 255}.{num % 254} user alice@example.com"
    if kind == 8:
        return f"{ts} INFO session refreshed because the token expired (see the password reset link docs)"
    return f"{ts} DEBUG compiled {num % 400} files in {rng.random():.3f}s, cache hit ratio 0.{num % 99}"


def build_log(seed: int = 20240501) -> tuple[str, list[str], list[int]]:
    """Return (log text, planted secrets, indices of the ordinary lines)."""
    rng = random.Random(seed)
    lines: list[str] = []
    secrets: list[str] = []
    ordinary: list[int] = []
    size = 0
    n = 0
    while size < TARGET_BYTES:
        ts = f"2024-05-01T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"
        if rng.random() < SECRET_LINE_RATE:
            line, secret = _secret_line(rng, ts)
            secrets.append(secret)
        else:
            line = _ordinary_line(rng, ts)
            ordinary.append(n)
        lines.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(lines) + "\n", secrets, ordinary


def best_of(fn: Callable[[], str], repeats: int = REPEATS) -> tuple[float, str]:
    best = float("inf")
    out = ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def stream_redact(text: str, chunk: int = STREAM_CHUNK) -> str:
    """``text`` through a :class:`StreamRedactor` in chunks of ``chunk`` characters."""
    redactor = StreamRedactor()
    out = [redactor.feed(text[i : i + chunk]) for i in range(0, len(text), chunk)]
    out.append(redactor.flush())
    return "".join(out)


def _cpu_seconds(fn: Callable[[], str]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def serve_rounds() -> int:
    """The ``--against`` worker: time one run per request line (``oneshot``/``stream``) on the log."""
    text, secrets, _ordinary = build_log()
    jobs = {"oneshot": lambda: redact_text(text), "stream": lambda: stream_redact(text)}
    redacted = redact_text(text)
    module = sys.modules[redact_text.__module__].__file__
    print(f"ready {sum(s in redacted for s in secrets)} {module}", flush=True)
    for line in sys.stdin:
        print(f"{_cpu_seconds(jobs[line.strip()]):.6f}", flush=True)
    return 0


def _worker(root: Path) -> tuple[subprocess.Popen[str], str, str]:
    """A ``--serve`` process timing the redactor of checkout ``root``: (process, module, leaked)."""
    env = {**os.environ, "BENCH_REDACT_ROOT": str(root.resolve()), "PYTHONPATH": ""}
    worker = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert worker.stdout is not None
    ready, leaked, module = worker.stdout.readline().split(maxsplit=2)
    assert ready == "ready"
    return worker, module.strip(), leaked


def _timed(worker: subprocess.Popen[str], job: str) -> float:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(job + "\n")
    worker.stdin.flush()
    return float(worker.stdout.readline())


def paired(tree: str, rounds: int) -> int:
    """This checkout's redactor against ``tree``'s on the same log, alternating round by round.

    Both sides run in worker processes of their own, started the same way: a side timed in this
    process instead read about 15% slower than the same code in a worker (``--against`` this very
    checkout showed it), so only workers give a fair pair."""
    text, secrets, _ordinary = build_log()
    mb = len(text.encode()) / 1e6
    sides = {"ours": _worker(ROOT), "theirs": _worker(Path(tree))}
    for name, (_worker_process, module, leaked) in sides.items():
        print(f"{name}: redactor {module}; planted secrets surviving it: {leaked} of {len(secrets)}")
    ours, theirs = sides["ours"][0], sides["theirs"][0]
    for job in ("oneshot", "stream"):
        mine: list[float] = []
        base: list[float] = []
        for i in range(rounds):
            if i % 2:
                base.append(_timed(theirs, job))
                mine.append(_timed(ours, job))
            else:
                mine.append(_timed(ours, job))
                base.append(_timed(theirs, job))
        speed = round_ratios([mb / t for t in mine], [mb / t for t in base])
        ours_rate, their_rate = mb / statistics.median(mine), mb / statistics.median(base)
        print(
            f"{job}: ours {ours_rate:.1f} MB/s, {tree} {their_rate:.1f} MB/s "
            f"(CPU time, median of {rounds}); ours/theirs speed {speed.median:.3f} ({speed.spread()}); "
            f"best rounds {mb / min(mine):.1f} vs {mb / min(base):.1f} MB/s ({min(base) / min(mine):.3f})"
        )
    for process, _module, _leaked in sides.values():
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="best of N runs (default %(default)s)")
    parser.add_argument("--stream", action="store_true", help="also time the stream redactor")
    parser.add_argument("--against", metavar="TREE", help="paired rounds against another checkout")
    parser.add_argument(
        "--rounds", type=int, default=7, help="paired rounds with --against (default %(default)s)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve_rounds()
    if args.against:
        return paired(args.against, args.rounds)
    text, secrets, ordinary = build_log()
    mb = len(text.encode()) / 1e6
    t_redact, redacted = best_of(lambda: redact_text(text), args.repeats)
    t_base, _ = best_of(lambda: text.replace("needle-that-never-occurs", "x"), args.repeats)
    rate = mb / t_redact
    base = mb / t_base
    print(
        f"log: {mb:.1f} MB, {text.count(chr(10))} lines, {len(secrets)} planted secrets, "
        f"{redacted.count(REDACTED)} placeholders"
    )
    print(f"redact_text: {rate:.1f} MB/s  baseline(str.replace): {base:.0f} MB/s  ratio: {base / rate:.1f}x")
    status = 0
    if args.stream:
        t_stream, streamed = best_of(lambda: stream_redact(text), args.repeats)
        ratio = base * t_stream / mb
        print(f"stream ({STREAM_CHUNK}-char chunks): {mb / t_stream:.1f} MB/s  ratio: {ratio:.1f}x")
        if streamed != redacted:
            print("STREAM MISMATCH: streamed output differs from the one-shot redaction", file=sys.stderr)
            status = 1
    leaked = [s for s in secrets if s in redacted]
    if leaked:
        print(f"LEAK: {len(leaked)} planted secrets survived, e.g. {leaked[0]!r}", file=sys.stderr)
        status = 1
    before, after = text.split("\n"), redacted.split("\n")
    if len(before) != len(after):
        print(f"OVER-REDACTION: line count changed {len(before)} -> {len(after)}", file=sys.stderr)
        status = 1
    else:
        changed = [i for i in ordinary if before[i] != after[i]]
        if changed:
            example = after[changed[0]]
            print(f"OVER-REDACTION: {len(changed)} ordinary lines changed, e.g. {example!r}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
