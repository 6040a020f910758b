import json

from tasks.benchmarks.threadmed.publish import (
    dataset_card,
    dataset_folder,
    ingest_funnel_rows,
    plot_funnel,
    promote_latest,
    repaired_values_sentence,
    table1,
    version_id,
)
from tasks.benchmarks.threadmed.settings import BuildSettings


def test_table1_from_hand_counted_threads():
    # Two threads: 3 questions (2 answered) and 5 questions (5 answered).
    stats = table1(
        n_questions=[3, 5],
        n_answered=[2, 5],
        question_tokens=[10, 20, 30, 40, 50, 60, 70, 80],
        answer_tokens=[5, 5, 10, 10, 10, 10, 10],
        thread_tokens=[70, 400],
    )
    assert stats == {
        "threads": 2, "questions": 8, "answered_questions": 7, "answered_pct": 87.5,
        "follow_ups_min": 2, "follow_ups_max": 4, "follow_ups_mean": 3.0, "follow_ups_median": 3.0,
        "threads_exactly_3_turns": 1, "threads_exactly_3_turns_pct": 50.0,
        "threads_4plus_turns": 1, "threads_4plus_turns_pct": 50.0,
        "threads_5plus_turns": 1, "threads_5plus_turns_pct": 50.0,
        "question_tokens_mean": 45.0, "answer_tokens_mean": 8.6, "thread_tokens_mean": 235.0,
    }  # fmt: skip


def test_table1_of_an_empty_dataset_has_zeros_not_errors():
    assert table1([], [], [], [], [])["threads"] == 0


def _receipt(kind, source, lines, kept, dropped, rejected, sha="ab"):
    return {
        "source_file": source,
        "fingerprint": {"sha256": sha},
        "summary": {"kind": kind, "lines": lines, "kept": kept, "dropped": dropped,
                    "rejected": rejected, "repaired": {}, "truncated": False},
    }  # fmt: skip


def test_ingest_funnel_sums_reasons_over_files():
    receipts = [
        _receipt("submissions", "RS_1.zst", 10, 6, {"other_subreddit": 3}, {"invalid_json": 1}),
        _receipt("submissions", "RS_2.zst", 5, 4, {"other_subreddit": 1}, {}),
        _receipt("comments", "RC_1.zst", 7, 7, {}, {}),
    ]
    rows = ingest_funnel_rows(receipts)
    submissions = {r["reason"]: r["count_rows"] for r in rows if r["stage"] == "ingest submissions"}
    assert submissions == {
        None: 10,
        "dropped: other_subreddit": 4,
        "quarantined: invalid_json": 1,
        "kept": 10,
    }
    assert sum(count for reason, count in submissions.items() if reason) == 15  # every line read
    assert {r["stage_order"] for r in rows if r["stage"] == "ingest comments"} == {1}


def test_the_card_counts_the_values_that_lost_part_of_their_value_over_every_dump():
    inputs = [
        {"source_file": "RS_1.zst", "repaired_values": {"score": 2}},
        {"source_file": "RC_1.zst", "repaired_values": {"body": 1, "score": 1}},
    ]
    assert repaired_values_sentence(inputs) == (
        "Values of kept records that lost part of their value when cast to their column's type (nulled, "
        "characters replaced, a number cut), by column: `body` 1, `score` 3; per dump in `build.json`, "
        "`repaired_values`."
    )
    assert repaired_values_sentence([{"source_file": "RS_1.zst", "repaired_values": {}}]) == (
        "No value of a kept record lost any part when cast to its column's type."
    )


def test_versions_are_named_by_inputs_settings_and_salt(tmp_path):
    receipts = [_receipt("submissions", "RS_1.zst", 1, 1, {}, {}, sha="aa")]
    same = version_id(receipts, BuildSettings(), "sha256:aaa")
    assert same == version_id(list(receipts), BuildSettings(), "sha256:aaa")
    assert same != version_id(receipts, BuildSettings(seed=1), "sha256:aaa")
    assert same != version_id(receipts, BuildSettings(), "sha256:bbb")
    more = [*receipts, _receipt("comments", "RC_1.zst", 1, 1, {}, {})]
    assert same != version_id(more, BuildSettings(), "sha256:aaa")
    assert dataset_folder(str(tmp_path), receipts, BuildSettings(), "sha256:aaa", False) == str(tmp_path)
    assert dataset_folder(str(tmp_path), receipts, BuildSettings(), "sha256:aaa", True) == str(
        tmp_path / "versions" / same
    )


def _privacy_section(card: str) -> str:
    return card.split("## Privacy\n\n")[1].split("\n\n##")[0]


def test_the_card_says_whether_the_pseudonyms_are_safe_to_publish():
    stats = {name: table1([3], [2], [10], [5], [15]) for name in ("full", "answered")}
    build = {"git_commit": "abc", "built_at": "2026-01-01T00:00:00+00:00", "inputs": []}
    secret = {"salt_fingerprint": "sha256:0123456789ab", "publishable": True}
    default = {"salt_fingerprint": "sha256:ba9876543210", "publishable": False}
    assert _privacy_section(dataset_card(stats, BuildSettings(), {**build, "pseudonyms": secret})) == (
        "Usernames, and mentions of users (`u/name`), are replaced by `u_` plus 12 hex digits of a salted\n"
        "sha256; URLs are removed and e-mail addresses and phone numbers masked. The salt is secret and not\n"
        "published (its fingerprint is `sha256:0123456789ab`)."
    )
    assert _privacy_section(dataset_card(stats, BuildSettings(), {**build, "pseudonyms": default})) == (
        "**WARNING: NOT SAFE TO PUBLISH.** This build used the public default salt, so anyone can\n"
        "recover a username from its pseudonym by hashing candidate names. Rebuild with a secret salt\n"
        "(`THREADMED_PSEUDONYM_SALT`) before sharing it.\n"
        "\n"
        "Usernames, and mentions of users (`u/name`), are replaced by `u_` plus 12 hex digits of a salted\n"
        "sha256; URLs are removed and e-mail addresses and phone numbers masked."
    )


def test_promote_latest_moves_the_pointer_and_keeps_history(tmp_path):
    for version in ("v-1", "v-2"):
        (tmp_path / "versions" / version).mkdir(parents=True)
        (tmp_path / "versions" / version / "stats.json").write_text(version)
        promote_latest.fn(str(tmp_path), version)
    assert (tmp_path / "latest" / "stats.json").read_text() == "v-2"
    assert (tmp_path / "LATEST").read_text() == "v-2\n"
    assert [e["version"] for e in json.loads((tmp_path / "versions.json").read_text())] == ["v-1", "v-2"]


def test_funnel_figure_is_written(tmp_path):
    rows = [{"stage_order": 0, "stage": "posts", "reason": None, "count_rows": 100},
            {"stage_order": 1, "stage": "threads", "reason": None, "count_rows": 3},
            {"stage_order": 1, "stage": "threads", "reason": "too short", "count_rows": 97}]  # fmt: skip
    plot_funnel(rows, tmp_path / "funnel.png")
    assert (tmp_path / "funnel.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _section(card: str, title: str) -> str:
    return card.split(f"\n## {title}\n\n")[1].split("\n\n## ")[0]


def test_the_card_carries_the_terms_of_use_and_how_to_compare_with_the_release():
    stats = {name: table1([3], [2], [10], [5], [15]) for name in ("full", "answered")}
    build = {
        "git_commit": "abc",
        "built_at": "2026-01-01T00:00:00+00:00",
        "pseudonyms": {"salt_fingerprint": "sha256:0123456789ab", "publishable": True},
        "inputs": [],
    }
    card = dataset_card(stats, BuildSettings(), build)
    header = card.split("\n---\n")[0]
    assert "\nlicense: other\nlicense_name: threadmed-qa-research-terms\n" in header
    terms = _section(card, "Terms of use")
    for term in (
        "**Research use only.**",
        "**No clinical use.**",
        "**No re-identification.**",
        "**No linking back to Reddit.**",
        "**Removal on request.**",
    ):
        assert term in terms
    comparison = _section(card, "Comparing with the ThReadMed-QA release")
    assert "threadmed compare-release path/to/this/build --release path/to/release" in comparison
    assert "`answered/qa_pairs.parquet`" in comparison
