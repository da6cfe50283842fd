"""What an author name looks like, and what is printed around names but is not one.

The front-matter parser finds the rows under a title where names may be; these rules decide whether
the text of a row is a list of names at all (not a sentence of the abstract, a date, a
publication-type line or a paragraph in another script) and take off what stands beside the names:
honorifics ("Dr.", "by"), society grades ("Member, IEEE"), affiliation letters ("Jie Zhou a") and
capitals ("BEN ROBERTS" reads "Ben Roberts").
"""
from __future__ import annotations

import re

__all__ = ["is_name_list", "looks_like_name", "strip_decorations", "strip_emails", "tidy_names", "uncased_script"]

# words that are never part of a person's name but sit in name-like rows: publication types and
# versions ("Conference Paper \u00b7 June 2013", "Version 1.7")
_NOT_NAME_WORDS = frozenset("""
conference paper article proceedings journal volume vol issue preprint version draft manuscript
report thesis chapter edition workshop symposium abstract keywords contents introduction package
manual vignette tutorial supplementary appendix submitted accepted published revised
""".split())
# a month alone is what is left of a date ("27 November, 2022"); inside a name it may be a first name
_MONTHS = frozenset("""
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
""".split())
# lower-case particles of names ("Telmo de Menezes e Silva Filho", "Vincent van der Berg")
_PARTICLES = frozenset("de da do dos das di del della der den van von le la du des e y bin ibn al el ter ten zu".split())
_HONORIFIC_RE = re.compile(r"^(?:by|dr\.?|prof\.?|professor|mr\.?|mrs\.?|ms\.?)\s+(?=\S)", re.I)
_GRADE_RE = re.compile(r"^(?:(?:senior|student|graduate student|life|associate)\s+)?(?:member|fellow)$", re.I)
_ACRONYM_RE = re.compile(r"^[A-Z]{2,6}$")  # the society after a grade ("IEEE", "ACM")
# affiliation letters after a name, set as separate lower-case letters ("Zhou a", "Cui a,b")
_LETTER_MARKS_RE = re.compile(r"(?:\s+[a-z](?:\s*,\s*[a-z])*)+$")
_WORD_RE = re.compile(r"^[^\W\d_](?:[\w'\u2019.\-]*[\w.])?$")
_EMAIL_RE = re.compile(r"[<(\[]?\s*[\w.+\-{},]+@[\w\-]+(?:\.[\w\-]+)+\s*[>)\]]?")


def uncased_script(text: str) -> bool:
    """Whether the text holds letters of a script without capitals (Chinese, Japanese, Arabic...):
    such a paper may print its names in that script, a Latin one does not."""
    return any(c.isalpha() and not (c.isupper() or c.islower()) for c in text or "")


def strip_emails(text: str) -> str:
    """A name line without the e-mail addresses printed beside its names ("Ann Author
    <ann@example.org>", "Bob Builder (bob@example.org)")."""
    return re.sub(r"\s+", " ", _EMAIL_RE.sub(" ", text)).strip()


def strip_decorations(name: str) -> str:
    """One name without an honorific before it or affiliation letters after it."""
    name = _HONORIFIC_RE.sub("", name.strip())
    return _LETTER_MARKS_RE.sub("", name).strip()


def _name_case(name: str) -> str:
    """A name set in capitals ("IAN A. KASH", "KEVIN LEYTON-BROWN") in the usual case."""
    if any(c.islower() for c in name) or sum(c.isalpha() for c in name) < 2:
        return name
    return re.sub(r"[^\W\d_]+", lambda m: m.group(0)[0] + m.group(0)[1:].lower(), name)


def looks_like_name(name: str, uncased_ok: bool = False) -> bool:
    """A person's name: one to six words, each a capitalised word, an initial or an inner particle,
    none of them a month or a publication word. Words of a script without capitals count only when
    the paper is written in such a script (`uncased_ok`), and then as a short name."""
    words = name.split()
    if not 1 <= len(words) <= 6 or len(words) == 1 and words[0].lower().strip(".") in _MONTHS:
        return False
    for i, w in enumerate(words):
        if w.lower().strip(".") in _NOT_NAME_WORDS:
            return False
        if uncased_script(w):
            if not uncased_ok or len(w) > 6:
                return False
            continue
        if not _WORD_RE.match(w):
            return False
        if w[0].islower() and not (w in _PARTICLES and i < len(words) - 1):
            return False
    return True


def tidy_names(names: list[str], uncased_ok: bool = False, strict: bool = False) -> list[str] | None:
    """The names of a list with society grades ("Member", "IEEE"), honorifics and affiliation letters
    taken off, capitals turned to the usual case. Parts that are not names are dropped, or, when
    `strict`, make the whole list not one of names (None)."""
    out: list[str] = []
    after_grade = False
    for part in names:
        part = part.strip()
        if _GRADE_RE.match(part):
            after_grade = True
            continue
        if after_grade and _ACRONYM_RE.match(part):
            continue
        after_grade = False
        part = strip_decorations(part)
        if not part:
            continue
        if looks_like_name(part, uncased_ok):
            out.append(_name_case(part))
        elif strict:
            return None
    return out


def is_name_list(authors: str, uncased_ok: bool = False) -> bool:
    """A stored author string ("A, B, C") that is a list of names, not a sentence or a date."""
    return bool(tidy_names(authors.split(","), uncased_ok, strict=True))
