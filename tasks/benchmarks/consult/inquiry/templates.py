"""The question-template catalogue and the template space: a question -> its nearest template by cosine."""

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from tasks.core.files import safe_load_yaml
from tasks.llm.sdk import litellm_sdk

DATA_DIR = Path(__file__).parent / "data"
# The ids shared with the knowledge base's AIUs; the catalogue must hold exactly these, in this order.
TEMPLATE_IDS: tuple[str, ...] = (
    "chief_complaint", "onset_duration", "severity", "location_radiation", "character_quality",
    "timing_pattern", "aggravating_relieving", "fever_chills", "respiratory", "cardiac", "ent",
    "gastrointestinal", "urinary", "skin", "neurological", "gynae_pregnancy", "past_medical_history",
    "medications", "allergies", "family_history", "social_history", "exposures_travel_contacts",
    "prior_treatment", "systemic_red_flags", "impact_function", "mental_health",
)  # fmt: skip
# Words that tell question types apart although the stock English list drops them (when = onset, ...),
# and the fillers and auxiliaries of speech that it keeps.
KEPT_STOP_WORDS = frozenset({"when", "where", "often", "first", "last", "before", "side", "back", "ever"})
SPEECH_STOP_WORDS = frozenset(
    [
        "did",
        "does",
        "doing",
        "done",
        "okay",
        "ok",
        "um",
        "uh",
        "umm",
        "hmm",
        "mm",
        "yeah",
        "yes",
        "oh",
        "just",
        "really",
        "right",
        "kind",
        "sort",
        "got",
        "gets",
        "get",
        "little",
        "bit",
        "know",
        "think",
        "mean",
        "let",
        "said",
        "say",
        "alright",
        "sure",
        "like",
        "going",
        "gonna",
        "wanna",
        "good",
        "great",
        "today",
    ]
)


@functools.cache
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words less the kept ones, plus speech fillers.

    Imported on first use: scikit-learn takes seconds to import, and every `threadmed` command imports this.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return (ENGLISH_STOP_WORDS - KEPT_STOP_WORDS) | SPEECH_STOP_WORDS


SUFFIXES = ("ing", "ed", "es", "s", "e")
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class QuestionTemplate(BaseModel):
    """One question type: what a doctor asks to learn one kind of fact."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: Text
    name: Text
    keywords: tuple[Text, ...] = Field(min_length=1)
    paraphrases: tuple[Text, ...] = Field(min_length=4, max_length=8)
    linked_departments: tuple[Text, ...] = ()
    notes: str = ""


class TemplateCatalogue(BaseModel):
    """A versioned catalogue holding exactly the shared template ids, in their shared order."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Text
    templates: tuple[QuestionTemplate, ...]

    @model_validator(mode="after")
    def _holds_exactly_the_shared_ids(self) -> "TemplateCatalogue":
        ids = tuple(template.id for template in self.templates)
        if ids != TEMPLATE_IDS:
            missing = [i for i in TEMPLATE_IDS if i not in ids]
            unknown = [i for i in ids if i not in TEMPLATE_IDS]
            raise ValueError(
                f"template ids must be exactly the shared ids in order; missing {missing}, unknown {unknown}"
            )
        return self

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(template.id for template in self.templates)


def load_catalogue(version: str = "v1", path: Path | None = None) -> TemplateCatalogue:
    """Read and validate `data/templates_<version>.yaml` (or `path`); a bad file raises naming itself."""
    path = path or DATA_DIR / f"templates_{version}.yaml"
    try:
        return TemplateCatalogue.model_validate(safe_load_yaml(path.read_text()))
    except ValidationError as error:
        raise ValueError(f"{path}: {error}") from None


Embed = Callable[[Sequence[str]], np.ndarray]


def litellm_embedder(model: str) -> Embed:
    """Texts -> L2-normalised rows from an embedding model called through litellm (optional, online)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        response = litellm_sdk().embedding(model=model, input=list(texts))
        rows = np.array([item["embedding"] for item in response.data], dtype=np.float64)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    return embed


class TemplateSpace:
    """Questions and templates as vectors; `match` gives a question's nearest template and its cosine.

    A template's score is the best cosine over its examples (each paraphrase, and its keywords as one
    text). TF-IDF by default, fit once on those examples; `embed` replaces it (e.g. `litellm_embedder`).
    Matching is pure: the same question always gets the same answer; answers are cached.

    A question's words outside the TF-IDF vocabulary are not dropped: in `match` each keeps the weight
    of a term no example holds (scikit-learn's smoothed idf at document frequency 0) in the question's
    norm, so a question matches only as far as it was read. Without it, "Any cuogh how long?" matched
    the duration template at cosine 1.0 on "long" alone. `vectors` (used to name mined clusters) keeps
    the vocabulary's projection.
    """

    def __init__(self, catalogue: TemplateCatalogue, threshold: float = 0.3, embed: Embed | None = None):
        self.catalogue = catalogue
        self.threshold = threshold
        examples = [
            (t.id, text) for t in catalogue.templates for text in (*t.paraphrases, " ".join(t.keywords))
        ]
        owners = np.array([catalogue.ids.index(i) for i, _ in examples])
        self._is_example_of = owners[None, :] == np.arange(len(catalogue.ids))[:, None]
        texts = [text for _, text in examples]
        self._embed = embed
        if embed is None:
            from sklearn.feature_extraction.text import TfidfVectorizer  # seconds to import: only when used

            vectorizer = TfidfVectorizer(analyzer=terms, sublinear_tf=True).fit(texts)
            self._vocabulary: dict[str, int] = vectorizer.vocabulary_
            self._idf = vectorizer.idf_
            self._unread_idf = float(np.log(1 + len(texts)) + 1)
        self._examples = self.vectors(texts)
        self._cache: dict[str, tuple[str | None, float]] = {}

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Texts -> dense L2-normalised rows of this space."""
        if self._embed is not None:
            return self._embed(texts)
        return np.vstack([self._vector(text) for text in texts]) if texts else np.zeros((0, len(self._idf)))

    def _vector(self, text: str) -> np.ndarray:
        vector = self._weights(terms(text))
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def _weights(self, words: Sequence[str]) -> np.ndarray:
        # The fitted vectorizer's own weighting, without its per-call sparse-matrix overhead.
        counts = Counter(self._vocabulary[word] for word in words if word in self._vocabulary)
        vector = np.zeros(len(self._idf))
        for index, count in counts.items():
            vector[index] = (1.0 + np.log(count)) * self._idf[index]
        return vector

    def _question_vector(self, text: str) -> np.ndarray:
        """The question's vector over the vocabulary, divided by the norm of all its terms: an unread term
        keeps its weight there, so it lowers every cosine (`match`)."""
        if self._embed is not None:
            return self._embed([text])[0]
        words = terms(text)
        read = self._weights(words)
        unread = Counter(word for word in words if word not in self._vocabulary)
        unread_weight = sum(((1.0 + np.log(count)) * self._unread_idf) ** 2 for count in unread.values())
        norm = np.sqrt(read @ read + unread_weight)
        return read / norm if norm else read

    def unread_terms(self, text: str) -> tuple[str, ...]:
        """The question's terms outside the TF-IDF vocabulary, in order (none with an embedding model)."""
        if self._embed is not None:
            return ()
        return tuple(term for term in terms(text) if term not in self._vocabulary)

    def scores(self, vector: np.ndarray) -> np.ndarray:
        """One vector -> the cosine of each template (in catalogue order): its best example's."""
        return np.where(self._is_example_of, self._examples @ vector, -1.0).max(axis=1)

    def match(self, question: str) -> tuple[str | None, float]:
        """A question -> (nearest template id, cosine); the id is None when the cosine is under threshold."""
        key = normalise_question(question)
        if key not in self._cache:
            scores = self.scores(self._question_vector(key))
            best = int(np.argmax(scores))  # ties go to the earlier template
            cosine = float(scores[best])
            self._cache[key] = (self.catalogue.ids[best] if cosine >= self.threshold else None, cosine)
        return self._cache[key]


def normalise_question(text: str) -> str:
    """Lower case, one space between words: what makes two spellings of a question the same cache key."""
    return re.sub(r"\s+", " ", text.strip().lower())


def terms(text: str) -> list[str]:
    """A text's content words, crudely stemmed (medicines = medicine, started = start): the TF-IDF terms."""
    stop = stop_words()
    return [stem(word) for word in re.findall(r"[a-z]{2,}", text.lower()) if word not in stop]


def stem(word: str) -> str:
    """Strip one common English suffix when at least three letters remain (no stemmer package needed)."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
