"""The multi-turn loop: a counterpart speaks as `user`, the model under test answers as `assistant`.

Turn t sends u0, a0, ..., u(t-1), a(t-1), ut. The history's assistant messages are the model's own
replies, or replies given in advance (ThReadMed's oracle condition: the physician's answers). With its
own replies, a turn without a usable reply ends the dialogue: later turns would need a history that
does not exist. The counterpart is a function of the turn and the history so far: a scripted list of
questions (ThReadMed's patient) or another role's model (a simulated patient).
"""

from collections.abc import Callable, Sequence
from typing import NamedTuple

from tasks.llm.ledger import CallRecord

Message = dict[str, str]
# The counterpart's message at a turn, given the conversation so far.
Counterpart = Callable[[int, list[Message]], str]
# The model's reply to the messages: a call record, or None when it is not known (a dry run's lookup).
Reply = Callable[[list[Message]], CallRecord | None]


class Exchange(NamedTuple):
    turn: int
    record: CallRecord | None


def scripted(user_messages: Sequence[str]) -> Counterpart:
    """A counterpart that says its given messages in order, whatever was answered."""
    return lambda turn, _history: user_messages[turn]


def run_dialogue(
    turns: range,
    counterpart: Counterpart,
    reply: Reply,
    given_replies: Sequence[str] | None = None,
) -> list[Exchange]:
    """Ask each of `turns` in order → one exchange per turn asked; turns before `turns.start` are history.

    With `given_replies` every turn's history uses them, so every turn is asked; without, the history
    is the model's own replies and the first turn with no successful reply is the last one asked.
    """
    if turns.start > 0 and given_replies is None:
        raise ValueError("turns before the first one asked are history: they need given replies")
    history: list[Message] = []
    exchanges: list[Exchange] = []
    for turn in range(turns.stop):
        history.append({"role": "user", "content": counterpart(turn, history)})
        record = None
        if turn >= turns.start:
            record = reply(list(history))
            exchanges.append(Exchange(turn, record))
        if given_replies is not None:
            history.append({"role": "assistant", "content": given_replies[turn]})
        elif record is None or record.status != "ok":
            break
        else:
            history.append({"role": "assistant", "content": record.text or ""})
    return exchanges
