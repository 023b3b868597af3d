"""The repository explains itself: no file cites a document a maintainer cannot read.

A comment, docstring or page that says "issue 18", "seed 000", "DESIGN contract 6", "DESIGN.md" or
``../shared`` points at something that is not in the repository, so the reason it stands for is lost
to whoever carries the project on. Every such place states the reason directly or names the rule it
keeps (``docs/design.md``, "The rules the code keeps": "no orphan card", "output is data", …).

The word "seed" stays allowed where it means a random-number seed or filling a store with data: in
Python only comments and strings are read for it (an identifier such as ``seed_sessions`` or a
``seed: int`` parameter is code, not a citation), and :data:`RANDOM_SEED` lets the prose that means a
random generator's seed through.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The checkout's root: the nearest folder above this file that holds ``pyproject.toml`` (so the
#: test keeps working wherever in ``tests/`` it lives).
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())

#: The kinds of file a maintainer reads: code, pages, project and CI configuration.
SUFFIXES = frozenset({".py", ".md", ".toml", ".yml", ".yaml"})

#: Folders that hold no file of ours: installed npm clients, caches, build output, version control.
SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        ".git",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        "build",
        "dist",
    }
)

#: Citations of something outside the repository, anywhere in a file (code, prose, strings).
CITATIONS: dict[str, re.Pattern[str]] = {
    "an issue number": re.compile(r"\bissues?\s*(?:#\s*)?\d+", re.IGNORECASE),
    "an issue number in a name": re.compile(r"issue_?\d+", re.IGNORECASE),
    "the design document outside the repository": re.compile(r"\bDESIGN\b"),
    "a numbered contract": re.compile(r"\bcontracts?\s+\d+", re.IGNORECASE),
    "the shared folder outside the repository": re.compile(r"\.\./shared\b|/work/shared\b"),
    "a numbered specification seed": re.compile(r"seed[-_ ]?\d{3}", re.IGNORECASE),
}

#: A specification seed ("seed 000", "the seed's factories", "seed-000 descriptor"); read in prose only.
SEED = re.compile(r"\bseeds?\b|\bseed[-_]?\d{3}\b", re.IGNORECASE)

#: Prose where "seed" is a random generator's seed (``random.seed``, a Hypothesis seed).
RANDOM_SEED = re.compile(r"\b(?:random|hypothesis|rng)(?:\.|'?s?\s+)seeds?\b", re.IGNORECASE)

#: Comments and string literals (an f-string's text is its own token from Python 3.12 on).
PROSE_TOKENS = frozenset(
    {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
)

#: A comment's line break inside a citation ("issue\n    # 18") reads as one space.
COMMENT_BREAK = re.compile(r"\n[ \t]*#?[ \t]*")


def repository_files() -> Iterator[Path]:
    """Every file of the kinds a maintainer reads, outside the skipped folders."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            path = Path(folder, name)
            if path.suffix in SUFFIXES:
                yield path


def prose_of_python(source: str) -> str:
    """A module's comments and string literals, each on its own line: where a citation would be."""
    pieces: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in PROSE_TOKENS:
                pieces.append(token.string)
    except (tokenize.TokenError, SyntaxError):
        return source  # a file Python cannot read is judged as plain text
    return "\n".join(pieces)


def citations_in(text: str, prose: str) -> list[str]:
    """What ``text`` cites that is not in the repository, each with the words around it."""
    found: list[str] = []
    joined = COMMENT_BREAK.sub(" ", text)
    for what, pattern in CITATIONS.items():
        found += [f"{what}: {_around(joined, m)}" for m in pattern.finditer(joined)]
    joined_prose = COMMENT_BREAK.sub(" ", prose)
    for match in SEED.finditer(joined_prose):
        window = joined_prose[max(0, match.start() - 12) : match.end()]
        if not RANDOM_SEED.search(window):
            found.append(f"a specification seed: {_around(joined_prose, match)}")
    return found


def _around(text: str, match: re.Match[str]) -> str:
    return " ".join(text[max(0, match.start() - 40) : match.end() + 40].split())


def test_no_file_cites_what_is_not_in_the_repository() -> None:
    offenders: list[str] = []
    for path in repository_files():
        if path == Path(__file__).resolve():
            continue  # this file names the patterns it looks for
        text = path.read_text(encoding="utf-8", errors="replace")
        prose = prose_of_python(text) if path.suffix == ".py" else text
        offenders += [f"{path.relative_to(ROOT)}: {c}" for c in citations_in(text, prose)]
    assert not offenders, "state the reason or name the rule instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "text",
    [
        "# cancel answers within a few ms (issue 28.9)\n",
        "# see Issue #18\n",
        "ISSUE18_CASES = []\ndef _issue18_secret_line() -> None:\n    pass\n",
        "# the password forms (issue\n#   26)\n",
        '"""Hooks are contained (DESIGN contract 6)."""\n',
        '"""As DESIGN.md says."""\n',
        "# the routing order (contract 4)\n",
        "# copied from ../shared/seeds\n",
        '"""The seed\'s callback factories."""\n',
        "# a seed-000 descriptor\n",
        "# validated as seed 000 says\n",
        "def test_descriptors_as_seed_000_says() -> None:  # the seed_000 rule\n    pass\n",
    ],
)
def test_each_kind_of_citation_is_caught(text: str) -> None:
    assert citations_in(text, prose_of_python(text))


@pytest.mark.parametrize(
    "text",
    [
        "rng = random.Random(seed)\n",
        "def simulated_turn(seed: int = 7) -> None:\n    random.seed(seed)\n",
        "older, newer = seed_sessions(state, work, prompts)\n",
        "# the same random seed gives the same log\n",
        "# print Hypothesis' seed when it fails: the rng's seed is kept\n",
        '"""Routing order: the tool card first (no orphan card)."""\n',
        "# the issue is that a reader may stop reading\n",
    ],
)
def test_what_is_not_a_citation_passes(text: str) -> None:
    assert citations_in(text, prose_of_python(text)) == []
