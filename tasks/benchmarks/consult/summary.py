"""The consultation benchmark's run summary: per agent and epoch, episodes completed, differentials and
plans unparsed, failed, and the mean composite."""

from functools import partial

from tasks.evals.outputs import EpisodeCounts, summarize_by_epoch

# The line breaks keep the CLI's table 80 columns wide.
EPISODES = EpisodeCounts(
    counts={
        "completed": ("status", "completed"),
        "dx\nunparsed": ("diagnosis_parse", "unparseable"),
        "plan\nunparsed": ("plan_parse", "unparseable"),
        "failed": ("status", "failed"),
    },
    score_column="composite",
    score_label="composite",
    score_note=(
        "mean per-episode composite 0-100 (the four stage scores averaged) over scored episodes where every "
        "stage is defined (failed excluded)"
    ),
)
summarize = partial(summarize_by_epoch, how=EPISODES)
