"""Text analysis shared by indexing and querying (stop words removed, Porter stemming).

Both sides of the match must go through the *same* `analyze`, so it lives here alone.

Tokenisation decisions (documented because they change what matches):
  * lowercase, then split on anything that is not a Unicode letter or digit (so "top-k" -> "top", "k";
    "Fig.3(a)" -> "fig", "3", "a");
  * keep alphanumeric tokens that contain at least one letter ("ctr", "bert", "2d", "l2", "f1",
    "resnet50") -- in figure text these are often the most specific words;
  * drop pure numbers ("3", "2019", "0.5" -> "0", "5"): figure/table numbers, years and axis values
    are noise for topical similarity;
  * drop 1-character tokens (variable names "x", "k", panel letters "(a)");
  * drop English stop words (classic Lucene/NLTK/SMART-like list below), checked before stemming;
  * Snowball English ("Porter2") stemming with PyStemmer, cached per distinct raw token.

Speed: one regex `findall` per text plus one dict lookup per token (the cache maps a raw token
straight to its stem or to "" when dropped), roughly 10-40 us per figure text -> 1M texts in well
under a few minutes on one core.
"""
from __future__ import annotations

import re

import Stemmer

# NLTK english list + Lucene's classic list + frequent SMART function words. Kept deliberately
# "classic": content words common in papers ("figure", "model", "results") are *not* stop words;
# they simply get a low idf.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also although
    always am among amongst an and another any anyhow anyone anything anyway anywhere are aren aren't
    around as at be became because become becomes becoming been before beforehand behind being below
    beside besides between beyond both but by can cannot could couldn couldn't did didn didn't do does
    doesn doesn't doing don don't done down during each eg e.g either else elsewhere enough etc even
    ever every everyone everything everywhere except few for former formerly from further had hadn
    hadn't has hasn hasn't have haven haven't having he hence her here hereafter hereby herein hereupon
    hers herself him himself his how however i ie i.e if in indeed into is isn isn't it it's its itself
    just latter latterly least less ll ma may me meanwhile might mightn mightn't mine more moreover
    most mostly much must mustn mustn't my myself namely neither never nevertheless next no nobody
    none noone nor not nothing now nowhere of off often on once one only onto or other others
    otherwise our ours ourselves out over own per perhaps rather re same say says shall shan shan't
    she she's should should've shouldn shouldn't since so some somehow someone something sometime
    sometimes somewhere still such than that that'll the their theirs them themselves then thence
    there thereafter thereby therefore therein thereupon these they this those though through
    throughout thru thus to together too toward towards under until up upon us ve very via was wasn
    wasn't we well were weren weren't what whatever when whence whenever where whereafter whereas
    whereby wherein whereupon wherever whether which while whither who whoever whole whom whose why
    will with within without won won't would wouldn wouldn't yet you you'd you'll you're you've your
    yours yourself yourselves
    """.split()
) | frozenset(
    # Words of the reference itself ("as Figure 3 shows", "see Fig. 2(a)"): every figure text has
    # them because mention sentences are part of it, so they carry no topic and only clutter the
    # "matched terms" explanation.
    "fig figs figure figures tab table tables eq eqs equation sec section shown show shows".split()
)

_TOKEN_RE = re.compile(r"[^\W_]+")
_STEMMER = Stemmer.Stemmer("english")
_CACHE: dict[str, str] = {}
_CACHE_MAX = 2_000_000  # distinct raw tokens; cleared when exceeded (typos/ids can grow it unbounded)


def _stem_token(tok: str) -> str:
    """Stem of one lowercase raw token, or "" when the token is dropped."""
    if len(tok) < 2 or tok in STOP_WORDS or tok.isdigit():
        return ""
    if not any(c.isalpha() for c in tok):  # e.g. unicode digits
        return ""
    return _STEMMER.stemWord(tok)


def analyze(text: str) -> list[str]:
    """Lowercase, tokenise, drop stop words/numbers/1-char tokens, stem. Same for docs and queries."""
    if not text:
        return []
    cache = _CACHE
    get = cache.get
    out: list[str] = []
    append = out.append
    for tok in _TOKEN_RE.findall(text.lower()):
        s = get(tok)
        if s is None:
            s = _stem_token(tok)
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            cache[tok] = s
        if s:
            append(s)
    return out


def figure_text(caption: str, mention_contexts: list[str] | None) -> str:
    """The text that represents a figure (as in Kuzi & Zhai's recommender): caption first, then every mention context.

    Each mention context is already "sentence before + mentioning sentence + sentence after",
    joined by the caller; all mentions are merged. Caption first matters for models that truncate.
    """
    parts = [caption.strip()] if caption and caption.strip() else []
    for ctx in mention_contexts or ():
        if ctx and ctx.strip():
            parts.append(ctx.strip())
    return "\n".join(parts)


# In-text citation markers: "[3, 12-14]", "(Smith and Lee, 2019; ...)", "(... et al., 2020)",
# "Smith et al. (2020)". A body text without them says what the paper is about, not whom it cites
# (which papers cite each other is what the related-figures evaluation counts as relevant).
_CITATION_RE = re.compile(
    r"\[[\d,;\s\u2013\-]+\]"
    r"|\((?:[^()]*?\bet al\.?[^()]*?|[A-Z][A-Za-z\-]+(?: and [A-Z][A-Za-z\-]+)?,? (?:19|20)\d\d[a-z]?(?:;[^()]*)?)\)"
    r"|\b[A-Z][A-Za-z\-]+ et al\.?(?: \(?(?:19|20)\d\d[a-z]?\)?)?")


def without_citations(text: str) -> str:
    return _CITATION_RE.sub(" ", text or "")


def top_term_counts(text: str, n: int = 300) -> dict[str, int]:
    """The `n` most frequent analysed terms of a long text with their counts (ties: first seen)."""
    counts: dict[str, int] = {}
    for t in analyze(without_citations(text)):
        counts[t] = counts.get(t, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:n])
