"""Eras of the dumps: the fields and types records carry, month by month, as Pushshift and Arctic Shift
changed them."""

from dataclasses import dataclass

from tasks.synth.people import FLAIRS_BY_ROLE
from tasks.synth.timeline import FIRST_YEAR, MONTHS, month_of


@dataclass(frozen=True, slots=True)
class Era:
    """Which fields and types the records of one month carry (pushshift-format.md, section 2)."""

    string_created: float  # share of records whose created_utc is a numeric string
    comment_stickied: bool
    is_submitter: bool
    comment_permalink: bool
    comment_richtext: bool
    submission_richtext: bool
    author_fullname: bool
    removed_by_category: bool
    upvote_ratio: bool
    galleries: bool
    is_video: bool
    submission_created: bool  # the non-UTC `created` field
    comment_name: bool
    comment_float_edited: bool
    submission_float_edited: bool
    comment_retrieved: tuple[str, ...]
    submission_retrieved: tuple[str, ...]
    retrieval_lag_days: int
    sorted_keys: bool  # Arctic Shift, from 2023-04
    meta: bool
    unverified_label: str | None  # what AskDocs showed on unverified users that month
    automod_share: float  # posts that get an AutoModerator sticky


def _era(month: int) -> Era:
    ym = (FIRST_YEAR + month // 12, month % 12 + 1)

    def within(first: tuple[int, int], last: tuple[int, int] = (9999, 12)) -> bool:
        return first <= ym <= last

    both_retrieved = within((2021, 7), (2022, 6))
    return Era(
        string_created=0.99 if ym == (2015, 2) else float(ym <= (2015, 11)),
        comment_stickied=within((2015, 12)),
        is_submitter=within((2017, 8)),
        comment_permalink=within((2017, 11)),
        comment_richtext=ym == (2018, 4) or within((2018, 6)),
        submission_richtext=within((2018, 4)),
        author_fullname=within((2018, 7)),
        removed_by_category=within((2019, 9)),
        upvote_ratio=within((2020, 5)),
        galleries=within((2020, 6)),
        is_video=within((2017, 6)),
        submission_created=ym <= (2015, 11),
        comment_name=not within((2015, 8), (2021, 1)),
        comment_float_edited=within((2016, 6), (2016, 9)) or ym == (2018, 3) or within((2021, 2), (2023, 3)),
        submission_float_edited=within((2017, 5), (2018, 8)) or within((2020, 5), (2023, 3)),
        comment_retrieved=("retrieved_utc",) if within((2021, 2), (2021, 6)) else ("retrieved_on",),
        submission_retrieved=("retrieved_on", "retrieved_utc") if both_retrieved
        else ("retrieved_utc",) if within((2020, 5), (2021, 6)) else ("retrieved_on",),
        retrieval_lag_days=365 if ym < (2018, 1) else 100 if ym < (2021, 1) else 14,
        sorted_keys=within((2023, 4)),
        meta=within((2023, 11)),
        unverified_label=FLAIRS_BY_ROLE["unverified"][0] if within((2016, 6), (2021, 6))
        else FLAIRS_BY_ROLE["layperson"][0] if within((2021, 7)) else None,
        automod_share=0.35 if within((2016, 1)) else 0.0,
    )  # fmt: skip


_ERAS = [_era(month) for month in range(MONTHS)]


def era_of(created: int) -> Era:
    return _ERAS[month_of(created)]
