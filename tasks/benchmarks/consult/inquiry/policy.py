"""The mined inquiry policy: the smoothed Markov P(next template | template) and the partial orders."""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

DATA_DIR = Path(__file__).parent / "data"
START, END = "START", "END"


class PartialOrder(NamedTuple):
    """`before` is asked first in `share` of the `support` dialogues that ask both."""

    before: str
    after: str
    support: int
    share: float


class InquiryPolicy:
    """Transition counts over templates with START and END, read with additive smoothing.

    P(next | prev) = (count(prev, next) + smoothing) / (count(prev, *) + smoothing * (templates + 1)),
    `next` ranging over the templates and END; `prev` None means START.

    Templates rank after `prev` by falling count; equal counts by how often the experts ask the template at
    all (its count over every row, START included), then by template id. The rule is deterministic and
    independent of the order of templates in any file; after a template the experts never asked (a row
    never mined, `unmined_rows`) it ranks their most asked templates first.
    """

    def __init__(
        self,
        template_ids: Sequence[str],
        counts: np.ndarray,
        smoothing: float,
        partial_orders: Sequence[PartialOrder] = (),
    ):
        self.template_ids = tuple(template_ids)
        self.counts = np.asarray(counts, dtype=np.float64)  # rows START + templates, columns templates + END
        if self.counts.shape != (len(self.template_ids) + 1,) * 2:
            raise ValueError(f"counts must be {len(self.template_ids) + 1} x {len(self.template_ids) + 1}")
        self.smoothing = smoothing
        self.partial_orders = list(partial_orders)
        smoothed = self.counts + smoothing
        self.probabilities = smoothed / smoothed.sum(axis=1, keepdims=True)
        self._row = {START: 0, **{t: i + 1 for i, t in enumerate(self.template_ids)}}
        self._column = {**{t: i for i, t in enumerate(self.template_ids)}, END: len(self.template_ids)}
        asked = self.counts[:, :-1].sum(axis=0)
        self._ranked = [
            sorted(range(len(self.template_ids)), key=lambda i: (-row[i], -asked[i], self.template_ids[i]))
            for row in self.counts[:, :-1]
        ]

    def probability(self, prev: str | None, next: str | None) -> float:
        """P(next | prev); prev None is START, next None is END."""
        return float(self.probabilities[self._row[prev or START], self._column[next or END]])

    def top_k_next(self, prev: str | None, k: int = 3) -> list[str]:
        """The k most probable next templates after `prev` (None: the first question); END is not one."""
        return [self.template_ids[i] for i in self._ranked[self._row[prev or START]][:k]]

    @property
    def unmined_rows(self) -> tuple[str, ...]:
        """The templates no mined dialogue asked: what follows them is ranked by the tie rule alone."""
        return tuple(t for t in self.template_ids if not self.counts[self._row[t]].any())

    def greedy_sequence(self, max_len: int) -> list[str]:
        """The Markov-greedy order: from START, the most probable template not yet asked, `max_len` times
        at most. END is ignored: when to stop is the agent's budget, not the policy's."""
        sequence: list[str] = []
        while len(sequence) < min(max_len, len(self.template_ids)):
            prev = sequence[-1] if sequence else None
            ranked = self.top_k_next(prev, k=len(self.template_ids))
            sequence.append(next(t for t in ranked if t not in sequence))
        return sequence

    @classmethod
    def from_directory(cls, folder: Path) -> "InquiryPolicy":
        """Read the `transitions.json` and `partial_orders.json` that mining wrote to `folder`."""
        transitions = json.loads((folder / "transitions.json").read_text())
        orders = json.loads((folder / "partial_orders.json").read_text())
        return cls(
            template_ids=transitions["states_to"][:-1],
            counts=np.array(transitions["counts"]),
            smoothing=transitions["smoothing"],
            partial_orders=[
                PartialOrder(p["before"], p["after"], p["support"], p["share"]) for p in orders["pairs"]
            ],
        )


def load_policy(version: str = "v1") -> InquiryPolicy:
    """The committed policy mined from the shipped corpora (`data/mined_<version>/`)."""
    folder = DATA_DIR / f"mined_{version}"
    if not folder.is_dir():
        raise ValueError(f"no mined inquiry policy {version!r} (no folder {folder})")
    return InquiryPolicy.from_directory(folder)


def order_violations(sequence: Sequence[str], partial_orders: Sequence[PartialOrder]) -> tuple[int, int]:
    """(violated, applicable) partial-order pairs of a template sequence: applicable when both are asked,
    violated when `after` is first asked before `before`. POVR = violated / applicable (none: undefined)."""
    first = {}
    for turn, template in enumerate(sequence):
        first.setdefault(template, turn)
    applicable = [order for order in partial_orders if order.before in first and order.after in first]
    return sum(first[o.after] < first[o.before] for o in applicable), len(applicable)
