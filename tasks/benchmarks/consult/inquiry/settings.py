"""The mining's settings, apart from the mining itself: the command line reads their defaults without
importing scikit-learn, which every `threadmed` command would otherwise pay for at start-up."""

from pydantic import ConfigDict, Field

from tasks.core.strict import StrictModel


class MiningSettings(StrictModel):
    """Every choice of the mining; same corpora and settings, same output bytes."""

    model_config = ConfigDict(frozen=True)
    k: int = Field(48, ge=1, description="k-means clusters of the physician questions")
    seed: int = Field(0, description="k-means seed")
    naming_threshold: float = Field(
        0.4, ge=0, le=1, description="a cluster whose centroid's best template cosine is lower is `other`"
    )
    smoothing: float = Field(0.1, gt=0, description="additive smoothing of the Markov transition counts")
    precedence_share: float = Field(0.8, gt=0.5, le=1, description="a precedes b in at least this share")
    min_support: int = Field(5, ge=1, description="dialogues asking both templates, for a partial order")
    min_dialogues: int = Field(3, ge=1, description="a TF-IDF term must be asked in this many dialogues")
    top_k: int = Field(3, ge=1, description="the policy's next templates that count as a hit (reference)")
    catalogue_version: str = "v1"
    embedding_model: str | None = Field(
        None, description="litellm embedding model for questions and templates; default TF-IDF (offline)"
    )
