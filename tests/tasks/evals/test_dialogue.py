from datetime import UTC, datetime

import pytest

from tasks.evals.dialogue import Exchange, run_dialogue, scripted
from tasks.llm.ledger import CallRecord

QUESTIONS = ("q0", "q1", "q2")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def conversation(*texts: str) -> list[dict[str, str]]:
    roles = ["user", "assistant"] * len(texts)
    return [{"role": role, "content": text} for role, text in zip(roles, texts, strict=False)]


class Model:
    """Replies `a<turn>` to every request and keeps the messages it was sent; fails the turns in `failing`."""

    def __init__(self, failing: tuple[int, ...] = (), unknown: tuple[int, ...] = ()) -> None:
        self.sent: list[list[dict[str, str]]] = []
        self.failing, self.unknown = failing, unknown

    def __call__(self, messages: list[dict[str, str]]) -> CallRecord | None:
        self.sent.append(messages)
        turn = len(messages) // 2
        if turn in self.unknown:
            return None
        status = "failed" if turn in self.failing else "ok"
        text = None if status == "failed" else f"a{turn}"
        return CallRecord(
            key=f"k{turn}", model="m", status=status, text=text, started_at=NOW, finished_at=NOW
        )


def test_each_turn_is_asked_on_the_models_own_replies():
    model = Model()
    exchanges = run_dialogue(range(3), scripted(QUESTIONS), model)
    assert model.sent == [
        conversation("q0"),
        conversation("q0", "a0", "q1"),
        conversation("q0", "a0", "q1", "a1", "q2"),
    ]
    assert [(turn, record.text) for turn, record in exchanges] == [(0, "a0"), (1, "a1"), (2, "a2")]


def test_given_replies_make_the_history_and_earlier_turns_are_not_asked():
    model = Model(failing=(1,))
    exchanges = run_dialogue(range(1, 3), scripted(QUESTIONS), model, given_replies=("d0", "d1", "d2"))
    assert model.sent == [conversation("q0", "d0", "q1"), conversation("q0", "d0", "q1", "d1", "q2")]
    assert [(turn, record.status) for turn, record in exchanges] == [(1, "failed"), (2, "ok")]


@pytest.mark.parametrize("model", [Model(failing=(1,)), Model(unknown=(1,))], ids=["failed", "unknown"])
def test_a_turn_without_a_reply_ends_a_dialogue_on_its_own_replies(model):
    exchanges = run_dialogue(range(3), scripted(QUESTIONS), model)
    assert [turn for turn, _ in exchanges] == [0, 1] and len(model.sent) == 2
    assert exchanges[0] == Exchange(0, exchanges[0].record)


def test_the_counterpart_sees_the_conversation_so_far():
    heard: list[list[dict[str, str]]] = []

    def patient(turn: int, history: list[dict[str, str]]) -> str:
        heard.append(list(history))
        return f"q{turn} after {len(history)} messages"

    run_dialogue(range(2), patient, Model())
    assert heard == [[], conversation("q0 after 0 messages", "a0")]


def test_turns_before_the_first_asked_need_given_replies():
    with pytest.raises(ValueError, match="given replies"):
        run_dialogue(range(1, 3), scripted(QUESTIONS), Model())
