"""Provider token shapes recognised by their prefix alone (the table behind redact pass 3).

Why a table of its own: the list grows with every provider that ships a prefixed token, and it
was written by comparing against a maintained public rule set (gitleaks' ``config/gitleaks.toml``,
222 rules) rather than from memory. The patterns are our own; each starts with a literal so that
``re`` finds candidates with its fast prefix scan (a pass costs a few milliseconds per 10 MB
when the prefix never occurs), every repetition is bounded, and a look-behind right after the
literal rejects a start inside a longer token, so each pattern is linear in its input.

Families covered here (in addition to those inlined in :mod:`acp_adapter.safety.redact`: GitHub,
OpenAI/Anthropic ``sk-``, Stripe, AWS ``AKIA``/``ASIA``/``ABIA``/``ACCA``, Google ``AIza``/``ya29.``,
Slack, JWT, GitLab, Hugging Face ``hf_``, npm, PyPI, SendGrid, DigitalOcean, Twilio ``SK``):

1Password (service-account ``ops_eyJ``, secret key ``A3-``), Adobe ``p8e-``, age ``AGE-SECRET-KEY-1``,
Airtable PAT, Alibaba ``LTAI``, Artifactory ``AKCp``/``cmVmd``, Atlassian ``ATATT3``, AWS
``A3T``/Bedrock ``ABSK``, Azure AD client secrets (``…Q~…``), ClickHouse ``4b1d``, Clojars,
Cloudflare origin CA ``v1.0-``, Databricks ``dapi``, Discord bot tokens, Docker ``dckr_pat_``/
``dckr_oat_``, Doppler ``dp.*.``, Duffel, Dynatrace ``dt0c01.``, EasyPost ``EZAK``/``EZTK``,
Facebook page tokens ``EAAM``/``EAAC``, Flutterwave ``FLWSECK``/``FLWPUBK``, Fly.io ``fo1_``/``fm1?_``/
``fm2_``, Frame.io ``fio-u-``, GitLab extras (``glffct-``, ``GR1348941``, ``glsa_``/``glc_`` Grafana),
Grafana API keys ``eyJrIjoi``, Groq ``gsk_``, Harness ``pat.``/``sat.``, HashiCorp Terraform
``.atlasv1.``, HashiCorp Vault ``hvs.``/``hvb.``/``hvr.``, Heroku ``HRKU-AA``, Hugging Face org
``api_org_``, Infracost ``ico-``, Intra42, LangSmith ``lsv2_``, Linear ``lin_api_``, Mailgun
``key-``, Mapbox ``pk.eyJ``/``sk.eyJ``, MaxMind ``…_mmk``, New Relic ``NRAK-``/``NRII-``/``NRJS-``,
Notion ``ntn_``/``secret_``, Octopus Deploy ``API-``, OpenShift ``sha256~``, Perplexity ``pplx-``,
PlanetScale ``pscale_*``, Postman ``PMAK-``, Prefect ``pnu_``, Pulumi ``pul-``, ReadMe ``rdme_``,
Replicate ``r8_``, RubyGems, Scalingo ``tk-us-``, Sendinblue ``xkeysib-``, Sentry ``sntrys_``/
``sntryu_``, SettleMint ``sm_?at_``, Shippo, Shopify ``shpat_``/``shpca_``/``shppa_``/``shpss_``,
Slack config tokens ``xoxe.``, Square ``EAAA``/``sq0atp-``/``sq0csp-``, Stripe ``_prod_``,
Telegram bot tokens ``<id>:AA…`` (also inside ``/bot<id>:<token>/`` URL paths), Typeform ``tfp_``,
xAI ``xai-``.

Not covered as shapes (gitleaks' "semi-generic" rules that need a vendor word next to an
unprefixed random string, e.g. ``adafruit``, ``asana``, ``bitbucket``, ``twitter``, ``heroku`` UUIDs,
``facebook`` ``<id>|<secret>``, ``jwt-base64``, ``kubernetes-secret-yaml``, ``sourcegraph`` bare hex):
their values are still caught when the key names a secret (``TWITTER_API_SECRET=…``,
``"bitbucket_client_secret": …``) by the key/value pass, and left alone otherwise, because an
unprefixed 32-character hex string is a SHA or an id far more often than a credential.
"""

from __future__ import annotations

import re
from typing import Final

# Characters that may not directly precede a token (a placeholder's ``]`` counts: a second
# pass must see the same boundaries as the first).
_B: Final = r"\]A-Za-z0-9_\-"
_END: Final = r"(?![A-Za-z0-9_\[-])"


# Prefixed tokens: (literal prefix, body). The body carries its own end boundary. They are not
# scanned one by one (some 60 scans of the whole text would cost more than everything else the
# redactor does): :func:`grouped_patterns` merges them into a few scans anchored on a character
# of the prefix, so the cost grows with the number of anchors, not of providers.
PREFIXED: Final[tuple[tuple[str, str], ...]] = (
    ("ops_", r"eyJ[A-Za-z0-9+/]{100,4096}={0,3}"),
    ("A3-", r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}" + _END),
    ("p8e-", r"[A-Za-z0-9]{32}" + _END),
    ("AGE-", r"SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _END),
    ("LTAI", r"[A-Za-z0-9]{20}" + _END),
    ("AKCp", r"[A-Za-z0-9]{69}" + _END),
    ("cmVmd", r"[A-Za-z0-9]{59}" + _END),
    ("ATATT3", r"[A-Za-z0-9_=-]{100,400}" + _END),
    ("A3T", r"[A-Z0-9][A-Z2-7]{16}" + _END),
    ("ABSK", r"[A-Za-z0-9+/]{100,400}={0,2}"),
    ("4b1d", r"[A-Za-z0-9]{38}" + _END),
    ("CLOJARS_", r"[A-Za-z0-9]{60}" + _END),
    ("v1.0-", r"[a-f0-9]{24}-[a-f0-9]{146}" + _END),
    ("dapi", r"[a-f0-9]{32}(?:-[0-9])?" + _END),
    ("dckr_", r"(?:pat|oat)_[A-Za-z0-9_-]{20,255}" + _END),
    ("dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,64}" + _END),
    ("duffel_", r"(?:test|live)_[A-Za-z0-9_=-]{43}" + _END),
    ("dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}" + _END),
    ("EZAK", r"[A-Za-z0-9]{54}" + _END),
    ("EZTK", r"[A-Za-z0-9]{54}" + _END),
    ("EAA", r"(?:[MC][A-Za-z0-9]{100,4096}|A[A-Za-z0-9_-]{22,60})" + _END),
    ("FLWSECK", r"(?:_TEST)?-[A-Za-z0-9]{12,32}(?:-X)?" + _END),
    ("FLWPUBK", r"(?:_TEST)?-[A-Za-z0-9]{32}-X" + _END),
    ("fo1_", r"[A-Za-z0-9_-]{43}" + _END),
    ("fm1a_", r"[A-Za-z0-9+/]{100,4096}={0,3}"),
    ("fm1r_", r"[A-Za-z0-9+/]{100,4096}={0,3}"),
    ("fm2_", r"[A-Za-z0-9+/]{100,4096}={0,3}"),
    ("fio-", r"u-[A-Za-z0-9_=-]{64}" + _END),
    ("glffct-", r"[A-Za-z0-9_-]{20,255}" + _END),
    ("GR1348941", r"[A-Za-z0-9_-]{20,255}" + _END),
    ("glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _END),
    ("glc_", r"[A-Za-z0-9+/]{32,400}={0,3}"),
    ("eyJrIjoi", r"[A-Za-z0-9]{70,400}={0,3}"),
    ("gsk_", r"[A-Za-z0-9]{48,64}" + _END),
    ("pat.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}" + _END),
    ("sat.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}" + _END),
    ("hvs.", r"[A-Za-z0-9_-]{24,512}" + _END),
    ("hvb.", r"[A-Za-z0-9_-]{24,512}" + _END),
    ("hvr.", r"[A-Za-z0-9_-]{24,512}" + _END),
    ("HRKU-", r"AA[A-Za-z0-9_-]{58}" + _END),
    ("api_org_", r"[A-Za-z]{34}" + _END),
    ("ico-", r"[A-Za-z0-9]{32}" + _END),
    ("s-s4t2ud-", r"[a-f0-9]{64}" + _END),
    ("s-s4t2af-", r"[a-f0-9]{64}" + _END),
    ("lsv2_", r"(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _END),
    ("lin_api_", r"[A-Za-z0-9]{40}" + _END),
    ("key-", r"[a-f0-9]{32}" + _END),
    ("pk.", r"eyJ[A-Za-z0-9_-]{20,1024}\.[A-Za-z0-9_-]{20,256}" + _END),
    ("sk.", r"eyJ[A-Za-z0-9_-]{20,1024}\.[A-Za-z0-9_-]{20,256}" + _END),
    ("NRAK-", r"[A-Za-z0-9]{27}" + _END),
    ("NRII-", r"[A-Za-z0-9-]{32}" + _END),
    ("NRJS-", r"[a-f0-9]{19}" + _END),
    ("ntn_", r"[0-9]{11}[A-Za-z0-9]{35}" + _END),
    ("secret_", r"[A-Za-z0-9]{43}" + _END),
    ("API-", r"[A-Z0-9]{26}" + _END),
    ("sha256~", r"[A-Za-z0-9_-]{43}" + _END),
    ("pplx-", r"[A-Za-z0-9]{48}" + _END),
    ("pscale_", r"(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}" + _END),
    ("PMAK-", r"[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}" + _END),
    ("pnu_", r"[A-Za-z0-9]{36}" + _END),
    ("pul-", r"[a-f0-9]{40}" + _END),
    ("rdme_", r"[a-z0-9]{70}" + _END),
    ("r8_", r"[A-Za-z0-9]{37}" + _END),
    ("rubygems_", r"[a-f0-9]{48}" + _END),
    ("tk-us-", r"[A-Za-z0-9_-]{48}" + _END),
    ("xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}" + _END),
    ("sntryu_", r"[a-f0-9]{64}" + _END),
    ("sntrys_", r"eyJ[A-Za-z0-9+/=_]{40,1024}" + _END),
    ("sm_", r"(?:aat|pat|sat)_[A-Za-z0-9]{16}" + _END),
    ("shippo_", r"(?:live|test)_[A-Fa-f0-9]{40}" + _END),
    ("shpat_", r"[A-Fa-f0-9]{32}" + _END),
    ("shpca_", r"[A-Fa-f0-9]{32}" + _END),
    ("shppa_", r"[A-Fa-f0-9]{32}" + _END),
    ("shpss_", r"[A-Fa-f0-9]{32}" + _END),
    ("xoxe.", r"xox[bp]-[0-9]-[A-Za-z0-9]{100,200}" + _END),
    ("xoxe-", r"[0-9]-[A-Za-z0-9]{100,200}" + _END),
    ("sq0atp-", r"[A-Za-z0-9_-]{22,60}" + _END),
    ("sq0csp-", r"[A-Za-z0-9_-]{22,60}" + _END),
    ("sk_prod_", r"[A-Za-z0-9]{10,99}" + _END),
    ("rk_prod_", r"[A-Za-z0-9]{10,99}" + _END),
    ("tfp_", r"[A-Za-z0-9_.=-]{59}" + _END),
    ("xai-", r"[A-Za-z0-9]{80}" + _END),
)

# Shapes that do not fit the prefix table: (pattern, back, keep). ``back`` widens each match
# that many characters to the left (the literal is not the token's first character); ``keep``
# leaves that many leading characters of the match visible (the ``:`` before a Telegram token).
SPECIAL_SHAPES: Final[tuple[tuple[str, int, int], ...]] = (
    # Airtable personal access tokens: ``pat`` + 14 + ``.`` + 64 hex, anchored on the dot.
    (r"\.(?<=pat[A-Za-z0-9]{14}\.)(?<![" + _B + r"]pat[A-Za-z0-9]{14}\.)[a-f0-9]{64}" + _END, 17, 0),
    # Azure AD client secrets: three characters, a digit, ``Q~``, then 31-34 more.
    (
        r"Q~(?<=[A-Za-z0-9_~.]{3}[0-9]Q~)(?<![A-Za-z0-9_~.\]-][A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{31,34}"
        r"(?![A-Za-z0-9_~.\[-])",
        4,
        0,
    ),
    # HashiCorp Terraform: 14 characters, ``.atlasv1.``, 60-70 more.
    (
        r"\.atlasv1\.(?<=[A-Za-z0-9]{14}\.atlasv1\.)(?<![" + _B + r"][A-Za-z0-9]{14}\.atlasv1\.)"
        r"[A-Za-z0-9_=-]{60,70}" + _END,
        14,
        0,
    ),
    # MaxMind license keys end in ``_mmk``.
    (
        r"_mmk(?<=[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?<!["
        + _B
        + r"][A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)"
        + _END,
        36,
        0,
    ),
    # Telegram bot tokens ``<bot id>:AA<33 more>``: hide the token, keep the (public) bot id.
    (r":A(?<=[0-9]:A)[A-Za-z0-9_-]{34}" + _END, 0, 1),
)

#: Characters a prefixed token must not directly follow.
BOUNDARY: Final = frozenset("]ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ANCHORS: Final = "_-.~"


def _anchor(prefix: str) -> int:
    """Index of the prefix character a grouped scan looks for: the last of ``_ - . ~`` in it
    (rare in text, so few candidate positions), else its first character."""
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] in _ANCHORS:
            return i
    return 0


def grouped_patterns() -> list[tuple[re.Pattern[str], tuple[tuple[str, int], ...]]]:
    """One regex per anchor character over every prefixed shape anchored on it.

    Each alternative is ``(?<=prefix-up-to-anchor)rest-of-prefix(?P<gN>body)``: the scan jumps
    between occurrences of the anchor (a fast literal search), a fixed-width look-behind checks
    the part of the prefix before it, and ``lastgroup`` names the shape, whose ``(prefix,
    anchor index)`` the caller uses to widen the match to the token's start and check the
    boundary before it.

    Two refinements keep the common anchors cheap. Where every prefix has a character before the
    anchor, a one-character class look-behind (``-(?<=[3EeKP…]-)``) rejects most occurrences
    (dates, UUIDs, snake_case) with a single test, and a look-behind over the two characters
    before it (``(?<=A3-|GE-|…)``) most of the rest, before the alternatives are tried. A group of
    one prefix anchored on its first character is compiled as the plain literal, so ``re`` searches
    for the whole prefix at full speed instead of stopping at every occurrence of a common letter.
    """
    groups: dict[str, list[tuple[int, str, int]]] = {}
    for index, (prefix, _body) in enumerate(PREFIXED):
        k = _anchor(prefix)
        groups.setdefault(prefix[k], []).append((index, prefix, k))
    out: list[tuple[re.Pattern[str], tuple[tuple[str, int], ...]]] = []
    for anchor, members in groups.items():
        alternatives = []
        table: list[tuple[str, int]] = []
        for n, (index, prefix, k) in enumerate(members):
            body = PREFIXED[index][1]
            alternatives.append(
                f"(?<={re.escape(prefix[: k + 1])}){re.escape(prefix[k + 1 :])}(?P<g{n}>{body})"
            )
            table.append((prefix, k))
        if len(members) == 1 and members[0][2] == 0:
            ((index, prefix, _k),) = members
            out.append((re.compile(f"{re.escape(prefix)}(?P<g0>{PREFIXED[index][1]})"), tuple(table)))
            continue
        screen = ""
        if all(k > 0 for _index, _prefix, k in members):
            before = "".join(sorted({re.escape(prefix[k - 1]) for _index, prefix, k in members}))
            screen = f"(?<=[{before}]{re.escape(anchor)})"
        if all(k > 1 for _index, _prefix, k in members):
            pairs = sorted({re.escape(prefix[k - 2 : k + 1]) for _index, prefix, k in members})
            screen += "(?<=" + "|".join(pairs) + ")"
        pattern = re.escape(anchor) + screen + "(?:" + "|".join(alternatives) + ")"
        out.append((re.compile(pattern), tuple(table)))
    return out


#: Lower-cased literals of the tables, for the short-string screen in :func:`redact.redact_text`.
PROVIDER_TRIGGERS: Final[tuple[str, ...]] = (
    *sorted({prefix.lower() for prefix, _body in PREFIXED}),
    "q~",
    ".atlasv1.",
    "_mmk",
    ":a",
    "pat",
)
