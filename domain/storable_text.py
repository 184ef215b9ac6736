"""What a string the contract reads must be for every backend to keep it (pure; ADR-0135).

The strings the fold reads (ids, ``client``, ``demande_id``, ``modele``...) become keys and
columns of the projections' tables. PostgreSQL's text holds no U+0000, and its B-tree
indexes refuse a row past 2,704 bytes, which three 512-character keys of 4-byte characters
pass; no UTF-8 text holds a lone UTF-16 surrogate (``"\\ud800"``, which JavaScript's
``JSON.stringify`` writes). So such a string is at most ``MAX_STRING`` (512) characters,
at most ``MAX_NON_ASCII`` of them beyond ASCII, and holds no U+0000 and no lone surrogate.
The rule counts characters, not bytes, so that the OpenAPI document states it as a pattern
(ADR-0046), exactly but for the lone surrogate, which no pattern tells from a character
(JSON Schema's generators never make one); its worst case is 704 bytes a string. The
POST refuses an event that breaks it (422 naming the field); a stored event of an earlier
release that breaks it is set aside by every fold alike; a journal value that breaks it is
left out and counted.
Strings the contract does not read (unknown fields) are kept as received whatever they
hold.
"""

from __future__ import annotations

from miam_economies.domain.events import Correction, Delegation, Pilotage, Received
from miam_economies.domain.schema import MAX_NON_ASCII, MAX_STRING
from miam_economies.domain.strict_json import holds_unicode_escape

NUL = "\x00"


def text_fault(value: str) -> str | None:
    """Why ``value`` cannot be kept by every backend (a message, "must ..."), or None.

    Rules (module docstring): at most ``MAX_STRING`` characters, at most ``MAX_NON_ASCII``
    of them beyond ASCII, no U+0000, no lone surrogate. Cheap for the common case: an
    ASCII string costs two C-level scans."""
    if len(value) > MAX_STRING:
        return f"must be at most {MAX_STRING} characters"
    if NUL in value:
        return "must not hold the character U+0000 (NUL): no backend can keep it"
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must not hold a lone UTF-16 surrogate (\\ud800-\\udfff): it is not text"
    beyond = sum(1 for character in value if character > "\x7f")
    if beyond > MAX_NON_ASCII:
        return (f"must hold at most {MAX_NON_ASCII} characters beyond ASCII ({beyond} "
                "here): every backend must be able to index it")
    return None


def plain_json(raw: bytes) -> bool:
    """Whether every string of the JSON document ``raw`` (bytes) is plain ASCII without an
    escape: then none holds U+0000 or a surrogate (JSON writes them only as ``\\u``
    escapes) or a character beyond ASCII, so ``text_fault`` would find nothing the
    length check has not. One C-level scan each: what lets the POST skip the per-string
    walk on nearly every batch."""
    return raw.isascii() and not holds_unicode_escape(raw)


def stored_fault(value: Received) -> str | None:
    """Why the fold sets aside ``value``, a stored event read back (``Ecarte``), or None:
    the first of its strings that breaks the rule, as "``champ`` must ...". A store
    written by this release holds none (the POST refuses them); an earlier release's may
    (ADR-0135). Runs on every folded event: its strings joined pass three C-level scans
    when they are plain, short ASCII, as the plugin's are (about a quarter of
    ``from_payload``'s cost); only otherwise is each one looked at. Raises
    ``TypeError`` for a value whose strings are not strings (a payload never valid)."""
    kind = type(value)
    if kind is Delegation:
        d: Delegation = value  # type: ignore[assignment]
        joined = (d.id + d.client + d.session_id + d.demande_id + (d.agent_id or "")
                  + d.estimation.methode)
    elif kind is Pilotage:
        p: Pilotage = value  # type: ignore[assignment]
        joined = (p.id + p.client + p.session_id + p.agent_id + p.turn_id + p.modele
                  + "".join(p.demande_ids))
    elif kind is Correction:
        c: Correction = value  # type: ignore[assignment]
        joined = c.id + c.client + c.session_id + c.demande_id + c.tool_use_id
    else:
        raise TypeError(f"not a received event: {value!r}")
    if joined.isascii() and len(joined) <= MAX_STRING and NUL not in joined:
        return None  # every string is within the rule (each is shorter than them all)
    for champ, text in _texts(value):
        fault = None if text is None else text_fault(text)
        if fault is not None:
            return f"{champ} {fault}"
    return None


def _texts(value: Received) -> list[tuple[str, str | None]]:
    """Every string of ``value`` that the schema names, with its field's name."""
    texts: list[tuple[str, str | None]] = [
        ("id", value.id), ("client", value.client), ("session_id", value.session_id)]
    if isinstance(value, Delegation):
        texts += [("demande_id", value.demande_id), ("agent_id", value.agent_id),
                  ("estimation.methode", value.estimation.methode)]
    elif isinstance(value, Pilotage):
        texts += [("agent_id", value.agent_id), ("turn_id", value.turn_id),
                  ("modele", value.modele)]
        texts += [(f"demande_ids[{i}]", d) for i, d in enumerate(value.demande_ids)]
    else:
        texts += [("demande_id", value.demande_id), ("tool_use_id", value.tool_use_id)]
    return texts
