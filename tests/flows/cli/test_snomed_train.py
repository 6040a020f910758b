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
    (tmp_path / "oracle" / "checkpoints" / "checkpoint-2").mkdir(parents=True)  # it trained 2 steps
    assert_usage_error(
        threadmed_here(
            "snomed", "oracle-train", "--data", "data", "--out", "oracle", "--lora-rank", "4", cwd=tmp_path
        ),
        "Invalid value for '--out': oracle holds a run with other lora_rank; resume it with its settings "
        "(see oracle/manifest.json) or choose another --out",
    )


def test_export_only_without_a_finished_run_is_a_usage_error_before_any_training(tmp_path):
    write_oracle_data(tmp_path / "data")
    assert_usage_error(
        threadmed_here(
            "snomed", "oracle-train", "--data", "data", "--out", "oracle", "--export-only", cwd=tmp_path
        ),
        "Invalid value for '--export-only': nothing to export without training: the folder holds no run; "
        "run the same command without --export-only to train it",
    )
    assert not (tmp_path / "oracle").exists()


def test_a_gguf_without_the_merged_model_is_a_usage_error(tmp_path):
    write_oracle_data(tmp_path / "data")
    (tmp_path / "convert_hf_to_gguf.py").write_text("")
    options = ["--no-export", "--gguf-converter", "convert_hf_to_gguf.py"]
    assert_usage_error(
        threadmed_here("snomed", "oracle-train", "--data", "data", "--out", "oracle", *options, cwd=tmp_path),
        "Invalid value for '--gguf-converter': --gguf-converter converts the merged model: drop --no-export",
    )
