"""Explicit discriminator mappings for the bundled document.

Without a `mapping`, OpenAPI reads a tag value as the name of a schema, so tools that follow the
standard reject `"type": "message"` as unknown. orspec knows every tag value: the models' tagged
unions are read with the same `tag_values`. So every discriminator gets a mapping from each value
to the variant that fixes it, vendor variants included (run this after the fragments are merged).
Entries written by hand stay as written; validation checks them against the variants.
"""

from __future__ import annotations

from typing import Any

from .pointers import walk
from .schema import tag_values


def add_mappings(document: dict[str, Any]) -> None:
    """Complete the `mapping` of every discriminator in `document`, in place.

    A value that no variant fixes, or that two variants share, gets no entry: there is nothing
    one schema name could say about it (the validator reports such unions).
    """
    found = [
        node for _, node in walk(document) if isinstance(node, dict) and isinstance(node.get("discriminator"), dict)
    ]
    for node in found:
        discriminator = node["discriminator"]
        prop = discriminator.get("propertyName")
        variants = node.get("oneOf") or node.get("anyOf")
        mapping = discriminator.get("mapping", {})
        if not isinstance(prop, str) or not isinstance(variants, list) or not isinstance(mapping, dict):
            continue  # malformed: the OpenAPI check reports it
        owners: dict[str, set[str]] = {}
        for variant in variants:
            ref = variant.get("$ref") if isinstance(variant, dict) else None
            if isinstance(ref, str) and ref.startswith("#/"):
                for value in tag_values(variant, prop, document) or ():
                    if isinstance(value, str):
                        owners.setdefault(value, set()).add(ref)
        added = {value: next(iter(refs)) for value, refs in owners.items() if len(refs) == 1 and value not in mapping}
        if added:
            discriminator["mapping"] = {**mapping, **added}
