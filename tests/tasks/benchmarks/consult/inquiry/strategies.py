"""Questions for property tests: words of the shipped catalogue, and random words (a test assumes the
ones it needs are outside the template space's vocabulary)."""

import re
import string

from hypothesis import strategies as st

from tasks.benchmarks.consult.inquiry.templates import load_catalogue

CATALOGUE_WORDS = sorted(
    {
        word
        for template in load_catalogue("v1").templates
        for text in (*template.paraphrases, *template.keywords)
        for word in re.findall(r"[a-z]+", text.lower())
    }
)
questions = st.lists(st.sampled_from(CATALOGUE_WORDS), min_size=1, max_size=12).map(" ".join)
unread_words = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=12)
