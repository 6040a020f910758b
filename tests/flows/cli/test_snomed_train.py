"""`threadmed snomed oracle-train` in a terminal: what it says before any training starts."""

import json

from tasks.benchmarks.snomed.oracle_train.settings import OracleTrainSettings
from tests.flows.cli.terminal import assert_usage_error, threadmed_here
from tests.oracle_fixtures import write_oracle_data


def test_a_data_folder_without_chat_pairs_is_a_usage_error(tmp_path):
    (tmp_path / "data").mkdir()
    assert_usage_error(
        threadmed_here("snomed", "oracle-train", "--data", "data", "--out", "oracle", cwd=tmp_path),
        "Invalid value for '--data': data/chat/train.jsonl holds 0 pairs: data has no manifest.json either, "
        "so it is no oracle data folder: --data takes the --out folder of `threadmed snomed oracle-data`",
    )


def test_resuming_a_run_with_another_rank_is_a_usage_error(tmp_path):
    write_oracle_data(tmp_path / "data")
    (tmp_path / "oracle").mkdir()
    recorded = {"settings": OracleTrainSettings().model_dump(mode="json")}
    (tmp_path / "oracle" / "manifest.json").write_text(json.dumps(recorded))
    assert_usage_error(
        threadmed_here(
            "snomed", "oracle-train", "--data", "data", "--out", "oracle", "--lora-rank", "4", cwd=tmp_path
        ),
        "Invalid value for '--out': oracle holds a run with other lora_rank; resume it with its settings "
        "(see oracle/manifest.json) or choose another --out",
    )
