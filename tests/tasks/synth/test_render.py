"""Records and their lines: duplicates re-ingested with another score, keys sorted in Arctic Shift months."""

import random
from collections import defaultdict

import orjson

from tasks.synth.render import Encoder
from tasks.synth.timeline import utc


def test_some_records_are_duplicated_with_another_score(comments):
    by_id = defaultdict(list)
    for record in comments:
        by_id[record["id"]].append(record)
    twins = [copies for copies in by_id.values() if len(copies) > 1]
    assert twins and all(copies[0]["score"] != copies[1]["score"] for copies in twins)


def test_lines_sort_keys_from_2023_04_and_keep_designed_records_whole():
    encoder, record = Encoder(random.Random(1)), {"score": 1, "id": "abc", "body": "Hello"}
    arctic = [line for _ in range(200) for line in encoder.lines(record, created=utc(2023, 4), inert=False)]
    assert all(list(orjson.loads(line)) == ["body", "id", "score"] for line in arctic)
    pushshift = [
        line for _ in range(200) for line in encoder.lines(record, created=utc(2020, 1), inert=False)
    ]
    assert {tuple(orjson.loads(line)) for line in pushshift} >= {("score", "id", "body")}
