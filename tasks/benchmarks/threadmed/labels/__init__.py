"""Clinician ratings of a run's judged answers: the labels folder a rating round reads and writes.

    DIR/sample.json      what was sampled: run, judge, rubric, seed, strata (sample.py)
    DIR/items.parquet    LABEL_ITEMS: the sampled turns, with what the page hides (model, judge grade)
    DIR/rate.html        the self-contained, blinded rating page (page.py, rate.html)
    DIR/ratings.parquet  RATINGS: the raters' grades, imported from the page's CSV exports (ratings.py)

simulate.py is an offline stand-in for a clinician, for the demo and the tests; its ratings say so.
"""
