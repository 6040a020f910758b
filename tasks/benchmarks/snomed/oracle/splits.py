"""The oracle data's split by patient (train, validation, test), and what the split needs: a patient in every
split. oracle-train learns on train and measures its held-out loss on validation; patient-eval asks test's
held-out pairs. A split without a patient is refused before any call, with the fix; a split whose pairs were
all rejected or failed is named after the run, and by oracle-train."""

import random
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.core.preflight import UserError

DEFAULT_SPLIT = {"train": 0.8, "validation": 0.1, "test": 0.1}
# How many more patients to try when looking for a count that gives every split one: a split's share of p
# fills from about 2 / p patients, so every share of 1% or more is found within it.
MORE_PATIENTS_SEARCHED = 1000


def split_sizes(count: int, shares: Mapping[str, float] = DEFAULT_SPLIT) -> dict[str, int]:
    """How many of `count` patients each split gets, in the shares' order. Every split but the first gets
    its rounded share, at least one when there are as many patients as splits, filled from the last split;
    the first takes the remainder."""
    names = list(shares)
    wanted = {name: round(shares[name] * count) for name in names[1:]}
    if count >= len(names):
        wanted = {name: max(1, size) for name, size in wanted.items()}
    sizes, left = {}, count
    for name in reversed(names[1:]):
        sizes[name] = min(wanted[name], left)
        left -= sizes[name]
    return {names[0]: left, **{name: sizes[name] for name in names[1:]}}


def split_by_patient(
    case_ids: Iterable[str], seed: int, shares: Mapping[str, float] = DEFAULT_SPLIT
) -> dict[str, str]:
    """Each case id's split: a seeded shuffle cut by `split_sizes`, the last split first."""
    ordered = sorted(set(case_ids))
    random.Random(seed).shuffle(ordered)
    sizes = split_sizes(len(ordered), shares)
    names = list(shares)
    split, start = {}, 0
    for name in [*reversed(names[1:]), names[0]]:
        split.update({case_id: name for case_id in ordered[start : start + sizes[name]]})
        start += sizes[name]
    return split


def empty_splits(count: int, shares: Mapping[str, float] = DEFAULT_SPLIT) -> list[str]:
    """The splits that `count` patients leave without one, in the shares' order."""
    return [name for name, size in split_sizes(count, shares).items() if size == 0]


def fewest_patients(count: int, shares: Mapping[str, float] = DEFAULT_SPLIT) -> int | None:
    """The fewest patients above `count` from which on every count gives every split one, as far as
    MORE_PATIENTS_SEARCHED more; None when even the last of them leaves a split without one."""
    searched = range(count + 1, count + 1 + MORE_PATIENTS_SEARCHED)
    fewest = None
    for more in searched:
        if empty_splits(more, shares):
            fewest = None
        elif fewest is None:
            fewest = more
    return fewest


def shares_text(shares: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {share:.0%}" for name, share in shares.items())


def more_patients_fix(count: int, shares: Mapping[str, float], available: int | None) -> str:
    """What gives every split a patient: a higher --limit when the case set's `available` patients are
    enough (None: the limit is not what keeps them out), else a larger case set, else other shares."""
    fewest = fewest_patients(count, shares)
    if fewest is None:
        return f"give every split a larger share than {shares_text(shares)}"
    if available is not None and fewest <= available:
        return f"use --limit {fewest} or more"
    return f"build a case set of {fewest} or more patients (threadmed snomed cases)"


def check_every_split_has_a_patient(
    count: int, shares: Mapping[str, float], limit: int | None, available: int
) -> None:
    """A UserError before any call when `count` patients (the first `limit` of the case set's `available`)
    leave a split without one, naming the fix."""
    empty = empty_splits(count, shares)
    if not empty:
        return
    limited = limit is not None and limit < available
    patients = f"{count} patient{'s' * (count != 1)}"
    given = f"--limit {limit} gives {patients}" if limited else f"the case set has {patients}"
    raise UserError(
        f"{given}: the split by patient ({shares_text(shares)}) gives {' and '.join(empty)} none "
        f"(oracle-train needs train and validation pairs, patient-eval test's); "
        f"{more_patients_fix(count, shares, available if limited else None)}",
        "--limit" if limited else "--cases",
    )


def empty_split_reason(manifest: Mapping[str, Any], split: str) -> str | None:
    """Why the oracle data folder of `manifest` holds no pair in `split` (no patient, or every pair of its
    patients rejected or failed) and the fix; None when it holds some."""
    counts = manifest["counts"]
    if sum(counts["kept"][split].values()):
        return None
    patients, shares = counts["cases"][split], manifest["split"]
    total = sum(counts["cases"].values())
    if split in empty_splits(total, shares):
        fewest = fewest_patients(total, shares)
        fix = (
            f"from {fewest} or more patients (a higher --limit, or a larger case set)"
            if fewest
            else f"with larger shares than {shares_text(shares)}"
        )
        return (
            f"the data folder's split by patient ({shares_text(shares)}) gave {split} no patient of its "
            f"{total}; rebuild it with `threadmed snomed oracle-data` {fix}"
        )
    return (
        f"no pair of its {patients} {split} patient(s) was kept: each was rejected or its call failed (see "
        "the data folder's manifest.json); re-run `threadmed snomed oracle-data` into it to retry failed "
        "calls, or use another --teacher"
    )
