"""What a work's venue label says: published or not, conference or journal, and the year a citation gives.

The catalog's venue is a short label ("ICLR 2026", "Findings of ACL 2025", "JMLR", "arXiv", "Web/blog").
One rule dates every work (docs/catalog_accuracy.md, "The year rule"):

* a **published** work (any venue but the unpublished labels below) takes its venue's year, the year the
  label names ("ICLR 2026" -> 2026): that is what a citation manager and the proceedings give;
* an unpublished work (arXiv, a blog, a repository) takes the year of its first arXiv version, read from
  the arXiv id's ``yymm`` ("2412.10400" -> 2024), when it has an id;
* otherwise (a journal label without a year, a blog without an arXiv id) the year stays what its source
  says (a ``year`` fact in papers/data/verification/facts.csv, or the survey's).

The arXiv year is kept as its own field (``year_arxiv``) whatever the venue, so a published paper still
shows when it first appeared.
"""
from __future__ import annotations

import re

UNPUBLISHED_VENUES = ("", "arXiv", "Web/blog", "GitHub", "Hugging Face", "OpenReview", "SSRN", "Technical report")
"""Venue labels that are not a peer-reviewed publication: a preprint server, a web page, a repository,
a model card, an OpenReview submission page, a working-paper archive, a technical report."""
WEB_VENUES = ("Web/blog", "GitHub", "Hugging Face")
_JOURNALS = re.compile(r"^(JMLR|TMLR|JAIR|Nature|Science|IEEE T|ACM (?!MM\b)|Transactions|Journal|Psychological Review)")
_YEAR = re.compile(r"(?<!\d)(19|20)\d\d(?!\d)")
_NEW_ID = re.compile(r"(\d{2})(\d{2})\.\d{4,5}(v\d+)?")
_OLD_ID = re.compile(r"[a-z-]+(?:\.[A-Z]{2})?/(\d{2})(\d{2})\d{3}(v\d+)?")


def is_published(venue: str) -> bool:
    return venue.strip() not in UNPUBLISHED_VENUES


def is_journal(venue: str) -> bool:
    return is_published(venue) and bool(_JOURNALS.match(venue.strip()))


def venue_year(venue: str) -> int | None:
    """The year a published venue's label names ("ICLR 2025 Workshop on ..." -> 2025); None for an
    unpublished label or one without a year ("JMLR")."""
    if not is_published(venue):
        return None
    m = _YEAR.search(venue)
    return int(m.group(0)) if m else None


def arxiv_year(arxiv_id: str) -> int | None:
    """The year of an arXiv id's first version, from its ``yymm`` (2412.10400 -> 2024; hep-th/9901001 ->
    1999); None for no id or an id of another shape."""
    m = _NEW_ID.fullmatch(arxiv_id.strip())
    if m:
        return 2000 + int(m.group(1))
    m = _OLD_ID.fullmatch(arxiv_id.strip())
    if m:
        yy = int(m.group(1))
        return (1900 if yy >= 91 else 2000) + yy
    return None


def rule_year(venue: str, arxiv_id: str) -> int | None:
    """The year the rule gives a work, or None where the rule leaves it to the source (see the module doc)."""
    if is_published(venue):
        return venue_year(venue)
    return arxiv_year(arxiv_id)


_CONFERENCES = {
    "ICLR": "International Conference on Learning Representations",
    "ICML": "International Conference on Machine Learning",
    "NeurIPS": "Advances in Neural Information Processing Systems",
    "NIPS": "Advances in Neural Information Processing Systems",
    "ACL": "Annual Meeting of the Association for Computational Linguistics",
    "EMNLP": "Conference on Empirical Methods in Natural Language Processing",
    "NAACL": "Conference of the North American Chapter of the Association for Computational Linguistics",
    "EACL": "Conference of the European Chapter of the Association for Computational Linguistics",
    "COLING": "International Conference on Computational Linguistics",
    "COLM": "Conference on Language Modeling",
    "CVPR": "IEEE/CVF Conference on Computer Vision and Pattern Recognition",
    "ICCV": "IEEE/CVF International Conference on Computer Vision",
    "ECCV": "European Conference on Computer Vision",
    "AAAI": "AAAI Conference on Artificial Intelligence",
    "IJCAI": "International Joint Conference on Artificial Intelligence",
    "CoRL": "Conference on Robot Learning",
    "RSS": "Robotics: Science and Systems",
    "KDD": "ACM SIGKDD Conference on Knowledge Discovery and Data Mining",
    "AISTATS": "International Conference on Artificial Intelligence and Statistics",
    "AAMAS": "International Conference on Autonomous Agents and Multiagent Systems",
    "ICSE": "IEEE/ACM International Conference on Software Engineering",
    "EuroSys": "European Conference on Computer Systems",
    "CPAL": "Conference on Parsimony and Learning",
    "ICRA": "IEEE International Conference on Robotics and Automation",
    "CHI": "CHI Conference on Human Factors in Computing Systems",
}
_JOURNAL_NAMES = {"JMLR": "Journal of Machine Learning Research", "TMLR": "Transactions on Machine Learning Research",
                  "JAIR": "Journal of Artificial Intelligence Research"}
_YEAR_SUFFIX = re.compile(r"\s+(19|20)\d\d$")
_CONF_LABEL = re.compile(r"(?:(Findings of) )?([A-Za-z]+) ((?:19|20)\d\d)")


def venue_title(venue: str) -> str:
    """The venue as a BibTeX ``booktitle``/``journal``: a bare "CONF YEAR" label spelled out with the label
    kept ("ICLR 2026" -> "International Conference on Learning Representations (ICLR 2026)"; "Findings of
    ACL 2025" -> "Findings of the Association for Computational Linguistics: ACL 2025"), "JMLR"/"TMLR [year]"
    spelled out; any other label (a workshop, a track, a journal's own name) as it is."""
    label = venue.strip()
    if is_journal(label):  # a journal's name without the year label ("Nature 2025" -> "Nature")
        name = _YEAR_SUFFIX.sub("", label)
        return _JOURNAL_NAMES.get(name, name)
    m = _CONF_LABEL.fullmatch(label)
    if m:
        findings, conf, year = m.groups()
        if findings and conf in ("ACL", "EMNLP", "NAACL", "EACL"):
            return f"Findings of the Association for Computational Linguistics: {conf} {year}"
        if not findings and conf in _CONFERENCES:
            return f"{_CONFERENCES[conf]} ({conf} {year})"
        if not findings and conf in _JOURNAL_NAMES:
            return _JOURNAL_NAMES[conf]
    return _JOURNAL_NAMES.get(label, label)
