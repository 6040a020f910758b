"""JSON lists and objects found in free text (a model's reply), for any input, in time linear in its length.

Every parser that reads JSON out of a reply (treatment plans, judge verdicts, SNOMED answers) finds it
here, so none of them can be made to recurse past Python's limit or to rescan the text once per bracket.
One pass pairs the brackets outside JSON strings with an explicit stack; each outermost pair is decoded
once, from its own text, and a pair that does not decode is searched for the pairs inside it. Pairs nested
more than `MAX_DEPTH` deep are never decoded (no prompt asks for deeper JSON, and the standard decoder
recurses): a value holding one is not found, and `JsonScan.too_deep` counts them. A decoded value is tried
only where at most `MAX_DEPTH` others enclose the same text, so the decoding is linear too.
"""

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

MAX_DEPTH = 20
# No reply a prompt asks for holds more than a few hundred brackets and strings; past this many the text is
# not read on (about 0.1 s of scanning), whatever its length.
MAX_TOKENS = 100_000
# Outside every bracket only an opener matters; inside, runs of openers, each closer and each quote.
_OUTSIDE = re.compile(r"[\[{]+")
_INSIDE = re.compile(r'[\[{]+|[\]}]|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+("?)')
_CLOSER_OF = str.maketrans("[{", "]}")


class FoundJson(NamedTuple):
    value: Any  # a list or a dict (or what `object_pairs_hook` makes of an object)
    start: int  # text[start:end] is the JSON as written
    end: int


class JsonScan(NamedTuple):
    found: tuple[FoundJson, ...]  # outermost decoded values, in text order
    too_deep: int  # bracket pairs left undecoded for nesting deeper than MAX_DEPTH
    # Where the scan stopped after MAX_TOKENS brackets and strings, None when it read the whole text: what
    # follows was not read, so a reader must call the text unparseable rather than miss a value in it.
    stopped_at: int | None


def scan_json(text: str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> JsonScan:
    """Every outermost JSON list or object that decodes in `text`, and how many pairs nested too deep."""
    decoder = json.JSONDecoder(object_pairs_hook=object_pairs_hook)
    found: list[FoundJson] = []
    too_deep, decoded_to = 0, 0
    pairs, stopped_at = _bracket_pairs(text)
    for start, end, height in pairs:
        if start < decoded_to:
            continue  # inside a value already found
        if height > MAX_DEPTH:
            too_deep += 1
            continue
        try:
            # The pair's text alone: a decode error counts the line breaks before its position, which in the
            # whole text made a reply of many pairs that do not decode cost the square of its length.
            value, length = decoder.raw_decode(text[start:end])
        except (ValueError, RecursionError):  # ValueError: JSONDecodeError, or an integer past 4,300 digits
            continue
        decoded_to = start + length
        found.append(FoundJson(value, start, decoded_to))
    return JsonScan(tuple(found), too_deep, stopped_at)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An `object_pairs_hook` for JSON objects whose keys are all different: a repeated key makes the object
    not decode (which value counts is not read: `{"diagnosis": "not pneumonia", "diagnosis": "Pneumonia"}`;
    the decoder alone keeps the last without a word)."""
    decoded = dict(pairs)
    if len(decoded) != len(pairs):
        raise ValueError("a key is repeated")
    return decoded


def _bracket_pairs(text: str) -> tuple[list[tuple[int, int, int]], int | None]:
    """Every closed bracket pair of `text` as (start, end, height) in the order they open (height 1 for a
    pair holding no other), and where the scan stopped after MAX_TOKENS tokens (None: at the end). Quotes
    open a string only inside brackets (prose has apostrophes and quotation marks); a string that meets a
    line break, or a closer of the wrong kind, breaks every pair still open: neither is in valid JSON."""
    closed: list[tuple[int, int, int]] = []
    starts: list[int] = []  # the pairs open now, innermost last: where each opened, its height so far
    heights: list[int] = []
    closers: list[str] = []  # and the bracket that closes it
    position = 0
    for _ in range(MAX_TOKENS):
        token = (_INSIDE if starts else _OUTSIDE).search(text, position)
        if token is None:
            break
        position, end = token.span()
        char = text[position]
        if char == "[" or char == "{":
            starts.extend(range(position, end))
            heights.extend([1] * (end - position))
            closers.extend(token.group().translate(_CLOSER_OF))
        elif char == '"':
            if not token.group(1):  # the string breaks off at a line break or the end: no JSON
                starts.clear(), heights.clear(), closers.clear()
        elif closers[-1] == char:
            closers.pop()
            height = heights.pop()
            closed.append((starts.pop(), end, height))
            if heights and heights[-1] <= height:
                heights[-1] = height + 1
        else:
            starts.clear(), heights.clear(), closers.clear()
        position = end
    else:
        if (_INSIDE if starts else _OUTSIDE).search(text, position) is not None:
            closed.sort()
            return closed, position
    closed.sort()
    return closed, None
