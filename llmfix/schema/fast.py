"""The compiled fast path: jsonschema-rs answers "is this value valid?" and nothing more.

A "yes" ends validation; a "no" (or anything jsonschema-rs cannot do) goes to the schema's
plan (:mod:`llmfix.schema.plan`) or to jsonschema, which list the failures as the same
records, and :mod:`llmfix.schema.explain` writes every diagnostic, so codes, messages and
pointers come from one place. ``scripts/validator_crosscheck.py`` shows on 2,000 real
schemas that jsonschema-rs never says "valid" where jsonschema says "invalid".
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

from llmfix.schema.budget import pattern_is_risky

# jsonschema-rs validates in compiled code, 10-100x faster than jsonschema. It answers only
# "valid": a "no" (or anything it cannot do) goes to jsonschema, which writes every
# diagnostic, so codes, messages and pointers come from one place. Draft 3 is not supported
# there; schemas that needed files or remote documents stay on jsonschema, which resolved them.
_FAST_DRAFTS = {
    "draft-04": "Draft4Validator",
    "draft-06": "Draft6Validator",
    "draft-07": "Draft7Validator",
    "2019-09": "Draft201909Validator",
    "2020-12": "Draft202012Validator",
}


def fast_validator(document: Any, draft: str, external: dict[str, Any]) -> Any:
    """A jsonschema-rs validator for ``document``, or ``None`` where it cannot serve."""
    name = _FAST_DRAFTS.get(draft)
    if name is None or external or os.environ.get("LLMFIX_NO_FAST_VALIDATOR"):
        return None
    try:
        import jsonschema_rs
    except ImportError:
        return None
    try:
        # Formats are annotations (as in jsonschema without a format checker); no network,
        # ever: a reference jsonschema-rs cannot resolve offline leaves it to jsonschema.
        return getattr(jsonschema_rs, name)(document, validate_formats=False, offline=True)
    except Exception:  # a schema it rejects or cannot resolve: jsonschema decides
        return None


_REFERENCE_KEYWORDS: tuple[str, ...] = ("$ref", "$dynamicRef", "$recursiveRef", "$schema", "$id")


def self_contained(document: Any, draft: str) -> bool:
    """No references, no embedded dialects or ids, and every pattern compiles in Python.

    Property names count too (a property called ``$ref`` is taken for a reference): a
    false "no" costs only the up-front compile.
    """
    keywords = _REFERENCE_KEYWORDS
    if draft in ("draft-03", "draft-04"):
        keywords = (*keywords, "id")
    stack = [document]
    root = True
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if any(key in node for key in keywords if not (root and key == "$schema")):
            return False
        root = False
        patterns = [node.get("pattern")]
        if isinstance(node.get("patternProperties"), dict):
            names = list(node["patternProperties"])
            if any(isinstance(name, str) and pattern_is_risky(name) for name in names):
                return False  # the full check refuses it at load
            patterns.extend(names)
        for pattern in patterns:
            if isinstance(pattern, str):
                try:
                    re.compile(pattern)
                except (re.error, RecursionError, OverflowError):
                    return False
        stack.extend(node.values())
    return True


# Draft label → folder of its meta-schema in the jsonschema-specifications package (read
# as data: importing that package imports referencing).
_META_FOLDERS = {
    "draft-04": "draft4",
    "draft-06": "draft6",
    "draft-07": "draft7",
    "2019-09": "draft201909",
    "2020-12": "draft202012",
}
_FAST_META: dict[str, Any] = {}


def meta_valid_fast(schema: Any, draft: str) -> bool:
    """Whether jsonschema-rs finds ``schema`` valid against the exact meta-schema document
    jsonschema checks it with; ``False`` whenever it cannot tell (jsonschema then decides)."""
    if draft not in _FAST_META:
        _FAST_META[draft] = None
        folder = _META_FOLDERS.get(draft)
        found = importlib.util.find_spec("jsonschema_specifications")
        locations = found.submodule_search_locations if found is not None else None
        if folder is not None and locations:
            path = Path(next(iter(locations)), "schemas", folder, "metaschema.json")
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                document = None
            if document is not None:
                _FAST_META[draft] = fast_validator(document, draft, {})
    meta = _FAST_META[draft]
    return meta is not None and fast_is_valid(meta, schema)


def fast_is_valid(fast: Any, value: Any) -> bool:
    try:
        return bool(fast.is_valid(value))
    except Exception:  # a value it cannot take (say, an int over 2**64): ask jsonschema
        return False
