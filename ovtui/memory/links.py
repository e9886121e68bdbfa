"""Relations between memory files: ``links`` on the source, mirrored as ``backlinks`` on the target.

Entries are OpenViking's ``{from_uri, to_uri, link_type, weight, match_text, description,
created_at}`` (null values left out); two entries are the same link when
``from_uri|to_uri|match_text`` match, and the first one written is kept.
"""

from __future__ import annotations

from typing import Any

DERIVED_FROM = "derived_from"  # an experience → the trajectories it was learned from
# A case → the trajectories its runs became and the experiences they fed (OpenViking's type for both).
RELATED_TO = "related_to"
# The fields that hold relations: later applies add to them, so History compares and reverts them
# as sets of links (ovtui.memory.revert), not as part of the text.
RELATION_FIELDS = ("links", "backlinks")


def make_link(
    from_uri: str,
    to_uri: str,
    *,
    link_type: str = DERIVED_FROM,
    weight: float = 1.0,
    match_text: str | None = None,
    description: str | None = None,
    created_at: str | None = None,
) -> dict[str, Any]:
    link: dict[str, Any] = {"from_uri": from_uri, "to_uri": to_uri, "link_type": link_type, "weight": weight}
    if match_text:
        link["match_text"] = match_text
    if description:
        link["description"] = description
    if created_at:
        link["created_at"] = created_at
    return link


def link_key(link: dict[str, Any]) -> str:
    return f"{link.get('from_uri', '')}|{link.get('to_uri', '')}|{link.get('match_text') or ''}"


def merge_links(existing: Any, new: list[dict[str, Any]]) -> list[Any]:
    """``existing`` plus the links of ``new`` it does not hold yet (order kept; foreign entries kept)."""
    merged = list(existing) if isinstance(existing, list) else []
    seen = {link_key(link) for link in merged if isinstance(link, dict)}
    for link in new:
        key = link_key(link)
        if key not in seen:
            seen.add(key)
            merged.append(link)
    return merged
