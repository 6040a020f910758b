"""The SNOMED benchmark's run summary: per clinician and epoch, interviews answered, unanswered, answered
unreadably, failed."""

from functools import partial

from tasks.evals.outputs import EpisodeCounts, column_mean, summarize_by_epoch

# The line break keeps the CLI's table 80 columns wide.
INTERVIEWS = EpisodeCounts(
    counts={
        "answered": ("status", "answered"),
        "no\nanswer": ("status", "no_answer"),
        "un-\nparseable": ("status", "unparseable"),
        "failed": ("status", "failed"),
    },
    score=column_mean("f1"),
    score_label="F1",
    score_note="mean F1 0-100 over scored interviews (failed excluded); cost of clinician and patient",
)
summarize = partial(summarize_by_epoch, how=INTERVIEWS)
