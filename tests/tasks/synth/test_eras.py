"""Field sets and types drift by month, as in the real dumps."""

from collections import Counter

from tasks.synth.eras import era_of
from tasks.synth.timeline import utc


def test_eras_switch_fields_at_their_months():
    assert era_of(utc(2015, 11)).string_created == 1.0 and era_of(utc(2015, 12)).string_created == 0.0
    assert not era_of(utc(2019, 8)).removed_by_category and era_of(utc(2019, 9)).removed_by_category
    assert not era_of(utc(2023, 3)).sorted_keys and era_of(utc(2023, 4)).sorted_keys
    assert era_of(utc(2021, 7)).submission_retrieved == ("retrieved_on", "retrieved_utc")
    assert era_of(utc(2015, 1)).unverified_label is None
    assert era_of(utc(2021, 7)).unverified_label.startswith("Layperson")


def test_fields_drift_by_era(submissions, comments):
    records = submissions + comments
    for record in records:
        created = int(float(record["created_utc"]))
        assert not isinstance(record["created_utc"], str) or created < utc(2015, 12)
        assert "author_flair_richtext" not in record or created >= utc(2018, 4)
        assert "removed_by_category" not in record or created >= utc(2019, 9)
        assert "is_submitter" not in record or created >= utc(2017, 8)
    kinds = Counter(type(record["created_utc"]).__name__ for record in records)
    assert kinds["str"] and kinds["int"] and kinds["float"]
    assert any(isinstance(record["edited"], float) for record in records)
    assert any(
        record.get("author_flair_type") == "richtext" and not record["author_flair_text"]
        for record in records
    )
    assert any(record.get("removed_by_category") for record in submissions)
    assert {"retrieved_on", "retrieved_utc"} <= {key for record in records for key in record}
