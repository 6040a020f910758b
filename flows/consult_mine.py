"""Mine the inquiry logic of the consultation benchmark from ACI-Bench and PriMock57 dialogues."""

from prefect import flow

from tasks.benchmarks.consult.inquiry.mining import MiningSettings, mine_inquiry


@flow(name="consult-mine")
def consult_mine(corpora: str, out_dir: str, settings: MiningSettings | None = None) -> str:
    """Write templates, transitions, partial orders, sequences, the empirical reference and report.md
    mined from the dialogues under `corpora` to `out_dir`; return out_dir."""
    return mine_inquiry(corpora=corpora, out_dir=out_dir, settings=settings or MiningSettings())
