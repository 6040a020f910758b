"""What a re-run of `oracle-train` does with the folder it finds, without training: nothing, the outputs a
finished run lacks, finishing from a checkpoint that ended the training, or training; never past --max-steps.
(The real fine-tune, resumed and exported: test_oracle_train_run.py.)"""

import json
from pathlib import Path

import pytest

from tasks.benchmarks.snomed.oracle_train.resume import (
    check_resumable,
    last_checkpoint,
    next_step,
    recorded_loss_before,
    training_ended_at,
    wanted_outputs,
)
from tasks.benchmarks.snomed.oracle_train.settings import OracleTrainSettings
from tasks.benchmarks.snomed.oracle_train.train import export_outputs, train_oracle
from tasks.core.preflight import UserError
from tests.oracle_fixtures import write_oracle_data

SETTINGS = OracleTrainSettings(max_steps=3)
TRAINED = {"status": "done", "settings": SETTINGS.model_dump(mode="json"), "outputs": {"adapter": "adapter"}}
MERGED = frozenset({"merged"})
MERGED_AND_GGUF = frozenset({"merged", "gguf"})
# A stand-in for llama.cpp's convert_hf_to_gguf.py: the same command line, a file written.
CONVERTER = (
    "import sys, pathlib\n"
    "merged, outfile = sys.argv[1], sys.argv[sys.argv.index('--outfile') + 1]\n"
    "pathlib.Path(outfile).write_bytes(b'GGUF' + pathlib.Path(merged, 'weights').read_bytes())\n"
)


def with_outputs(*names: str) -> dict:
    return {**TRAINED, "outputs": {"adapter": "adapter", **{name: name for name in names}}}


@pytest.mark.parametrize(
    ("recorded", "settings", "wanted", "ended", "step"),
    [
        (None, SETTINGS, MERGED, False, "train"),
        (TRAINED, SETTINGS, frozenset(), False, "nothing"),
        (TRAINED, SETTINGS, MERGED, False, "export"),  # the re-run: no step trained
        (with_outputs("merged"), SETTINGS, MERGED, False, "nothing"),
        (with_outputs("merged"), SETTINGS, MERGED_AND_GGUF, True, "export"),
        (with_outputs("merged", "gguf"), SETTINGS, MERGED_AND_GGUF, True, "nothing"),
        (TRAINED, OracleTrainSettings(max_steps=6), MERGED, False, "train"),  # longer: resumed
        ({**TRAINED, "status": "training"}, SETTINGS, MERGED, False, "train"),  # interrupted: resumed
        ({**TRAINED, "status": "training"}, SETTINGS, MERGED, True, "finish"),  # ended at its checkpoint
        (TRAINED, OracleTrainSettings(max_steps=3, epochs=1), MERGED, True, "finish"),
    ],
)
def test_what_a_re_run_does_with_the_folder_it_finds(recorded, settings, wanted, ended, step):
    assert next_step(recorded, settings, wanted, export_only=False, ended=ended) == step
    if step != "train":  # --export-only changes nothing where no training is due
        assert next_step(recorded, settings, wanted, export_only=True, ended=ended) == step


@pytest.mark.parametrize(
    ("recorded", "settings", "stands"),
    [
        (None, SETTINGS, "no run"),
        ({**TRAINED, "status": "training"}, SETTINGS, "an unfinished run"),
        (TRAINED, OracleTrainSettings(max_steps=6), "a run trained for other --max-steps or --epochs"),
    ],
)
def test_export_only_refuses_whatever_would_train(recorded, settings, stands):
    with pytest.raises(UserError) as refused:
        next_step(recorded, settings, MERGED, export_only=True, ended=False)
    assert (str(refused.value), refused.value.option) == (
        f"nothing to export without training: the folder holds {stands}; run the same command without "
        "--export-only to train it",
        "--export-only",
    )


def test_a_gguf_is_converted_from_the_merged_model_so_it_needs_the_export():
    assert wanted_outputs(export=True, gguf=True) == MERGED_AND_GGUF
    assert wanted_outputs(export=False, gguf=False) == frozenset()
    with pytest.raises(UserError) as refused:
        wanted_outputs(export=False, gguf=True)
    assert (str(refused.value), refused.value.option) == (
        "--gguf-converter converts the merged model: drop --no-export",
        "--gguf-converter",
    )


def write_checkpoint(out: Path, step: int, max_steps: int, epochs: float = 3.0) -> Path:
    folder = out / "checkpoints" / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    state = {"global_step": step, "max_steps": max_steps, "num_train_epochs": epochs, "log_history": []}
    (folder / "trainer_state.json").write_text(json.dumps(state))
    return folder


def test_the_last_checkpoint_is_the_highest_step_and_says_whether_it_ended_the_training(tmp_path):
    assert last_checkpoint(tmp_path) is None
    write_checkpoint(tmp_path, 9, max_steps=10)
    last = write_checkpoint(tmp_path, 10, max_steps=10)
    (tmp_path / "checkpoints" / "checkpoint-11").write_text("a file, not a checkpoint")
    assert last_checkpoint(tmp_path) == last
    assert training_ended_at(last, OracleTrainSettings(max_steps=10))
    assert not training_ended_at(last, OracleTrainSettings(max_steps=12))
    # By epochs: the steps its trainer planned, for the same epochs only.
    assert training_ended_at(last, OracleTrainSettings(epochs=3.0))
    assert not training_ended_at(last, OracleTrainSettings(epochs=4.0))
    assert not training_ended_at(None, SETTINGS)


def test_a_run_trained_past_max_steps_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"settings": SETTINGS.model_dump(mode="json")}))
    write_checkpoint(tmp_path, 6, max_steps=6)
    check_resumable(tmp_path, OracleTrainSettings(max_steps=6))
    with pytest.raises(UserError) as refused:
        check_resumable(tmp_path, OracleTrainSettings(max_steps=3))
    assert (str(refused.value), refused.value.option) == (
        f"{tmp_path} holds a run trained 6 steps, past --max-steps 3: give --max-steps 6 or more, or choose "
        "another --out",
        "--max-steps",
    )


def test_a_folder_of_a_run_with_other_settings_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text(
        json.dumps({"settings": OracleTrainSettings().model_dump(mode="json")})
    )
    write_checkpoint(tmp_path, 2, max_steps=10)
    check_resumable(tmp_path, OracleTrainSettings(max_steps=10))
    with pytest.raises(UserError) as refused:
        check_resumable(tmp_path, OracleTrainSettings(lora_rank=4))
    assert (str(refused.value), refused.value.option) == (
        f"{tmp_path} holds a run with other lora_rank; resume it with its settings "
        f"(see {tmp_path / 'manifest.json'}) or choose another --out",
        "--out",
    )


@pytest.mark.parametrize("status", ["training", "done"])
def test_a_folder_whose_run_trained_nothing_binds_only_its_unpacked_base(tmp_path, status):
    # A run refused by its --max-length after the base was unpacked: its manifest, no checkpoint, no step.
    refused = OracleTrainSettings(base="smollm2.gguf", max_length=128, max_steps=1)
    (tmp_path / "manifest.json").write_text(
        json.dumps({"status": status, "settings": refused.model_dump(mode="json")})
    )
    (tmp_path / "base").mkdir()
    check_resumable(tmp_path, refused.model_copy(update={"max_length": 512, "lora_rank": 4}))
    with pytest.raises(UserError) as refused_base:
        check_resumable(tmp_path, refused.model_copy(update={"base": "other.gguf", "max_length": 512}))
    assert (str(refused_base.value), refused_base.value.option) == (
        f"{tmp_path} holds a run with other base; resume it with its settings "
        f"(see {tmp_path / 'manifest.json'}) or choose another --out",
        "--out",
    )


def test_exports_write_only_the_missing_outputs_the_gguf_from_the_merged_model(tmp_path):
    converter = tmp_path / "convert_hf_to_gguf.py"
    converter.write_text(CONVERTER)
    merges = []

    def merge() -> Path:
        merges.append(1)
        (tmp_path / "merged").mkdir()
        (tmp_path / "merged" / "weights").write_bytes(b"w")
        return tmp_path / "merged"

    manifest = export_outputs(tmp_path, with_outputs(), MERGED_AND_GGUF, merge, converter)
    assert manifest["outputs"] == {"adapter": "adapter", "merged": "merged", "gguf": "oracle.gguf"}
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    assert ((tmp_path / "oracle.gguf").read_bytes(), len(merges)) == (b"GGUFw", 1)
    again = export_outputs(tmp_path, manifest, MERGED_AND_GGUF, merge, converter)
    assert (again, len(merges)) == (manifest, 1)


def test_adding_the_gguf_to_a_finished_run_converts_it_and_trains_nothing(tmp_path):
    """The issue's re-run: the same --max-steps with --gguf-converter; the run's steps and losses stay."""
    data, out = write_oracle_data(tmp_path / "data"), tmp_path / "oracle"
    (out / "merged").mkdir(parents=True)
    (out / "merged" / "weights").write_bytes(b"w")
    write_checkpoint(out, 3, max_steps=3)
    finished = {**with_outputs("merged"), "global_step": 3, "eval_loss": {"before": 2.0, "after": 1.0}}
    (out / "manifest.json").write_text(json.dumps(finished))
    converter = tmp_path / "convert_hf_to_gguf.py"
    converter.write_text(CONVERTER)
    # No torch is imported here: a step of training, or loading a model, would fail on this fake folder.
    manifest = train_oracle(data, out, SETTINGS, gguf_converter=converter)
    assert manifest == {**finished, "outputs": {**finished["outputs"], "gguf": "oracle.gguf"}}
    assert sorted(path.name for path in (out / "checkpoints").iterdir()) == ["checkpoint-3"]
    assert train_oracle(data, out, SETTINGS, gguf_converter=converter, export_only=True) == manifest


DATA = {"train": "a1", "validation": "b2"}
MEASURED = {**TRAINED, "data": {"sha256": DATA}, "eval_loss": {"before": 2.5, "after": 1.5}}


@pytest.mark.parametrize(
    ("recorded", "settings", "data", "before"),
    [
        (MEASURED, OracleTrainSettings(max_steps=6), DATA, 2.5),  # trained longer: the same base loss
        ({**MEASURED, "status": "training", "eval_loss": {"before": 2.5}}, SETTINGS, DATA, 2.5),  # stopped
        (None, SETTINGS, DATA, None),
        (MEASURED, SETTINGS, {**DATA, "validation": "c3"}, None),  # other held-out pairs
        (MEASURED, OracleTrainSettings(max_steps=3, max_length=256), DATA, None),  # cut otherwise
        ({**MEASURED, "eval_loss": {}}, SETTINGS, DATA, None),  # stopped before measuring it
        ({**MEASURED, "eval_loss": {"before": "nan?"}}, SETTINGS, DATA, None),  # not a loss: measured again
    ],
)
def test_a_resume_reads_the_base_loss_its_folder_measured_on_the_same_data_and_settings(
    recorded, settings, data, before
):
    assert recorded_loss_before(recorded, settings, data) == before
