"""The consultation benchmark's run summary: per agent and epoch, episodes completed, unparsed, failed."""

from functools import partial

from tasks.evals.outputs import EpisodeCounts, summarize_by_epoch

# The line break keeps the CLI's table 80 columns wide.
EPISODES = EpisodeCounts(
    counts={
        "completed": ("status", "completed"),
        "dx\nunparsed": ("diagnosis_parse", "unparseable"),
        "failed": ("status", "failed"),
    },
    score_column="core_dx_f1",
    score_label="Core-Dx F1",
    score_note="mean Core-Dx F1 0-100 over scored episodes (failed excluded)",
)
summarize = partial(summarize_by_epoch, how=EPISODES)
