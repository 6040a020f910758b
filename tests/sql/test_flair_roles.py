"""The flair_roles seed gives every flair string the dump generator writes (tasks/synth/) its role."""

import pytest

from tasks.synth.people import FLAIRS_BY_ROLE
from tests.sql.rows import raw_comment, raw_submission

FLAIRS = [(flair, role) for role, flairs in FLAIRS_BY_ROLE.items() for flair in flairs]


@pytest.mark.parametrize("shape", ["text", "richtext"])
def test_generator_flairs_get_their_role(duck, load_rows, run_model, shape):
    load_rows(duck, "raw_reddit__submissions", [raw_submission("p1")])
    load_rows(duck, "raw_reddit__comments", [
        raw_comment(f"c{n:03d}", author_flair_text=flair if shape == "text" else None,
                    author_flair_richtext_text=flair if shape == "richtext" else None)
        for n, (flair, _) in enumerate(FLAIRS)
    ])  # fmt: skip
    for model in ("stg_reddit__submissions", "stg_reddit__comments", "int_posts__filtered"):
        run_model(duck, model)
    classified = run_model(duck, "int_comments__classified")
    assert [(row["flair_role"], row["comment_class"]) for row in classified] == [
        (role, "answerer" if role == "physician" else "non_answerer") for _, role in FLAIRS
    ]
