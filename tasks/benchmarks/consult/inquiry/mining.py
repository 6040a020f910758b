"""Mine the inquiry logic of real consultations: questions -> k-means clusters -> templates -> sequences
-> the smoothed Markov policy, the partial orders and the empirical reference. Outputs hold ids, counts
and probabilities only, never corpus text (cluster top terms are single words used in 2+ questions)."""

import json
from collections.abc import Sequence
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from prefect import task

from tasks.benchmarks.consult.inquiry.corpora import (
    Dialogue,
    dialogues_with_doctor,
    extract_questions,
    read_corpora,
)
from tasks.benchmarks.consult.inquiry.policy import END, START, InquiryPolicy, PartialOrder, order_violations
from tasks.benchmarks.consult.inquiry.settings import MiningSettings
from tasks.benchmarks.consult.inquiry.templates import TemplateSpace, litellm_embedder, load_catalogue, terms

OTHER = "other"


class Cluster(NamedTuple):
    cluster: int
    template_id: str
    cosine: float
    size: int
    top_terms: list[str]


class MinedInquiry(NamedTuple):
    clusters: list[Cluster]
    unclustered: int  # questions with no content word (e.g. "how are you?"): `other`, not clustered
    questions: int
    sequences: dict[str, list[str]]
    policy: InquiryPolicy
    pair_counts: dict[tuple[str, str], tuple[int, int]]  # (a, b) -> (dialogues asking both, a first)
    reference: dict[str, Any]
    sources: dict[str, int]


def shared_vocabulary(questions: Sequence[str], dialogue_ids: Sequence[str], min_dialogues: int) -> list[str]:
    """The terms asked in at least `min_dialogues` dialogues: question words, not one patient's name."""
    dialogues_using: dict[str, set[str]] = {}
    for question, dialogue_id in zip(questions, dialogue_ids, strict=True):
        for term in terms(question):
            dialogues_using.setdefault(term, set()).add(dialogue_id)
    return sorted(term for term, used in dialogues_using.items() if len(used) >= min_dialogues)


def cluster_questions(
    questions: Sequence[str], dialogue_ids: Sequence[str], settings: MiningSettings
) -> tuple[np.ndarray, list[list[str]]]:
    """Questions -> (cluster label per question, -1 when it has no content word; top terms per cluster)."""
    # Imported here: scikit-learn takes seconds to import, and every `threadmed` command imports this module.
    from scipy.sparse import issparse
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    labels = np.full(len(questions), -1)
    if settings.embedding_model:
        vectors = litellm_embedder(settings.embedding_model)(questions)
        has_content, vocabulary = np.ones(len(questions), dtype=bool), None
    else:
        vocabulary_terms = shared_vocabulary(questions, dialogue_ids, settings.min_dialogues)
        if not vocabulary_terms:
            return labels, []
        vectorizer = TfidfVectorizer(analyzer=terms, sublinear_tf=True, vocabulary=vocabulary_terms)
        vectors = vectorizer.fit_transform(questions)
        has_content = np.asarray(vectors.getnnz(axis=1) > 0)
        vocabulary = vectorizer.get_feature_names_out()
    rows = vectors[has_content]
    # k-means cannot make more clusters than there are distinct questions (it would leave some empty).
    k = min(settings.k, len(np.unique(rows.toarray() if issparse(rows) else rows, axis=0)))
    if k == 0:
        return labels, []
    model = KMeans(n_clusters=k, random_state=settings.seed, n_init=10).fit(rows)
    labels[has_content] = model.labels_
    top_terms = [
        [str(vocabulary[i]) for i in np.argsort(-centre, kind="stable")[:8] if centre[i] > 0]
        if vocabulary is not None
        else []
        for centre in model.cluster_centers_
    ]
    return labels, top_terms


def name_clusters(
    questions: Sequence[str],
    labels: np.ndarray,
    top_terms: list[list[str]],
    space: TemplateSpace,
    threshold: float,
) -> list[Cluster]:
    """Each cluster -> the template nearest its centroid in the template space, or `other` under threshold."""
    vectors = space.vectors(questions)
    clusters = []
    for cluster, cluster_terms in enumerate(top_terms):
        members = labels == cluster
        centroid = vectors[members].mean(axis=0)
        norm = np.linalg.norm(centroid)
        scores = space.scores(centroid / norm if norm else centroid)
        best = int(np.argmax(scores))
        cosine = round(float(scores[best]), 6)
        template = space.catalogue.ids[best] if cosine >= threshold else OTHER
        clusters.append(Cluster(cluster, template, cosine, int(members.sum()), cluster_terms))
    return clusters


def template_sequence(question_templates: Sequence[str]) -> list[str]:
    """A dialogue's question templates in order -> its sequence: `other` dropped, repeats in a row merged
    (asking "any fever? any chills?" is one step of the inquiry)."""
    kept = [t for t in question_templates if t != OTHER]
    return [t for i, t in enumerate(kept) if i == 0 or kept[i - 1] != t]


def transition_counts(sequences: Sequence[Sequence[str]], template_ids: Sequence[str]) -> np.ndarray:
    """Counts of START -> first, each step, last -> END; rows START + templates, columns templates + END."""
    row = {START: 0, **{t: i + 1 for i, t in enumerate(template_ids)}}
    column = {**{t: i for i, t in enumerate(template_ids)}, END: len(template_ids)}
    counts = np.zeros((len(template_ids) + 1, len(template_ids) + 1), dtype=np.int64)
    for sequence in sequences:
        for prev, next_ in pairwise([START, *sequence, END]):
            counts[row[prev], column[next_]] += 1
    return counts


def precedence_counts(
    sequences: Sequence[Sequence[str]], template_ids: Sequence[str]
) -> dict[tuple[str, str], tuple[int, int]]:
    """For every ordered pair (a, b): (dialogues asking both, dialogues whose first a precedes first b)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for sequence in sequences:
        first = {}
        for turn, template in enumerate(sequence):
            first.setdefault(template, turn)
        for a in first:
            for b in first:
                if a != b:
                    pair = counts.setdefault((a, b), [0, 0])
                    pair[0] += 1
                    pair[1] += first[a] < first[b]
    order = {t: i for i, t in enumerate(template_ids)}
    return {
        pair: (both, before)
        for pair, (both, before) in sorted(counts.items(), key=lambda p: (order[p[0][0]], order[p[0][1]]))
    }


def partial_orders(
    pair_counts: dict[tuple[str, str], tuple[int, int]], share: float, min_support: int
) -> list[PartialOrder]:
    """The pairs asked by at least `min_support` dialogues with `a` first in at least `share` of them.
    Shares are compared as exact fractions: 4 of 5 is 80%, not 0.7999..."""
    threshold = Fraction(str(share))
    return [
        PartialOrder(a, b, both, round(before / both, 6))
        for (a, b), (both, before) in pair_counts.items()
        if both >= min_support and Fraction(before, both) >= threshold
    ]


def empirical_reference(
    sequences: dict[str, list[str]], template_ids: Sequence[str], settings: MiningSettings
) -> dict[str, Any]:
    """History-taking order statistics of the real dialogues, each scored against the policy and partial
    orders mined from all the others (leave-one-out over sequences; the clustering is fit once).

    Hit@k: share of a dialogue's turns whose template is among the top-k next templates given the previous
    one (START for the first). POVR: share of the applicable partial orders it asks in the wrong order.
    """
    all_counts = transition_counts(list(sequences.values()), template_ids)
    all_pairs = precedence_counts(list(sequences.values()), template_ids)
    hits, turns, hit_rates, povrs = 0, 0, [], []
    for sequence in sequences.values():
        if not sequence:
            continue
        own_pairs = precedence_counts([sequence], template_ids)
        others = {
            pair: (both - own_pairs.get(pair, (0, 0))[0], before - own_pairs.get(pair, (0, 0))[1])
            for pair, (both, before) in all_pairs.items()
        }
        policy = InquiryPolicy(
            template_ids, all_counts - transition_counts([sequence], template_ids), settings.smoothing
        )
        own_hits = sum(
            template in policy.top_k_next(prev, settings.top_k)
            for prev, template in zip([None, *sequence[:-1]], sequence, strict=True)
        )
        hits, turns = hits + own_hits, turns + len(sequence)
        hit_rates.append(own_hits / len(sequence))
        violated, applicable = order_violations(
            sequence, partial_orders(others, settings.precedence_share, settings.min_support)
        )
        if applicable:
            povrs.append(violated / applicable)
    return {
        "method": "leave-one-out over dialogue sequences",
        "k": settings.top_k,
        "dialogues": len(hit_rates),
        "turns": turns,
        "hit_at_k_mean": round(float(np.mean(hit_rates)), 6) if hit_rates else None,
        "hit_at_k_turns": round(hits / turns, 6) if turns else None,
        "povr_mean": round(float(np.mean(povrs)), 6) if povrs else None,
        "povr_dialogues": len(povrs),
    }


def mine(dialogues: Sequence[Dialogue], space: TemplateSpace, settings: MiningSettings) -> MinedInquiry:
    """Dialogues -> the mined inquiry logic. Pure and deterministic for given settings (seeded k-means)."""
    asked = [(d.dialogue_id, q) for d in dialogues for q in extract_questions(d)]
    questions = [q for _, q in asked]
    labels, top_terms = cluster_questions(questions, [i for i, _ in asked], settings)
    clusters = name_clusters(questions, labels, top_terms, space, settings.naming_threshold)
    by_dialogue: dict[str, list[str]] = {d.dialogue_id: [] for d in dialogues}
    for (dialogue_id, _), label in zip(asked, labels, strict=True):
        by_dialogue[dialogue_id].append(clusters[label].template_id if label >= 0 else OTHER)
    sequences = {dialogue_id: template_sequence(ts) for dialogue_id, ts in sorted(by_dialogue.items())}
    ids = space.catalogue.ids
    pair_counts = precedence_counts(list(sequences.values()), ids)
    policy = InquiryPolicy(
        ids,
        transition_counts(list(sequences.values()), ids),
        settings.smoothing,
        partial_orders(pair_counts, settings.precedence_share, settings.min_support),
    )
    sources: dict[str, int] = {}
    for dialogue in dialogues:
        source = dialogue.dialogue_id.split("/")[0]
        sources[source] = sources.get(source, 0) + 1
    return MinedInquiry(
        clusters=clusters,
        unclustered=int((labels < 0).sum()),
        questions=len(questions),
        sequences=sequences,
        policy=policy,
        pair_counts=pair_counts,
        reference=empirical_reference(sequences, ids, settings),
        sources=dict(sorted(sources.items())),
    )


def render_outputs(mined: MinedInquiry, settings: MiningSettings) -> dict[str, str]:
    """The mined inquiry logic as file name -> text (JSON and the Markdown report)."""
    policy = mined.policy
    ids = list(policy.template_ids)
    outputs = {
        "templates.json": {
            "catalogue": settings.catalogue_version,
            "questions": mined.questions,
            "unclustered": mined.unclustered,
            "clusters": [c._asdict() for c in mined.clusters],
        },
        "transitions.json": {
            "smoothing": settings.smoothing,
            "states_from": [START, *ids],
            "states_to": [*ids, END],
            "counts": policy.counts.astype(int).tolist(),
            "probabilities": np.round(policy.probabilities, 6).tolist(),
        },
        "partial_orders.json": {
            "precedence_share": settings.precedence_share,
            "min_support": settings.min_support,
            "pairs": [order._asdict() for order in policy.partial_orders],
        },
        "sequences.json": mined.sequences,
        "reference.json": mined.reference,
        "manifest.json": {"settings": settings.model_dump(), "dialogues": mined.sources},
    }
    rendered = {name: json.dumps(value, indent=1, sort_keys=False) + "\n" for name, value in outputs.items()}
    rendered["report.md"] = render_report(mined, settings)
    return rendered


def render_report(mined: MinedInquiry, settings: MiningSettings) -> str:
    """Support counts of the mining as Markdown: corpora, clusters, templates, orders, the reference."""
    other = sum(c.size for c in mined.clusters if c.template_id == OTHER) + mined.unclustered
    asked: dict[str, int] = {}
    for sequence in mined.sequences.values():
        for template in set(sequence):
            asked[template] = asked.get(template, 0) + 1
    reference = mined.reference
    lines = [
        "# Inquiry logic mining report",
        "",
        f"Dialogues: {sum(mined.sources.values())} ("
        + ", ".join(f"{source} {n}" for source, n in mined.sources.items())
        + f"); physician questions: {mined.questions}; k = {settings.k}, seed = {settings.seed}.",
        "",
        f"Questions named `other`: {other} ({other / max(mined.questions, 1):.1%}), of which "
        f"{mined.unclustered} have no content word (not clustered).",
        "",
        "| cluster | template | cosine | questions | top terms |",
        "|---|---|---|---|---|",
        *(
            f"| {c.cluster} | {c.template_id} | {c.cosine:.3f} | {c.size} | {', '.join(c.top_terms)} |"
            for c in mined.clusters
        ),
        "",
        "| template | dialogues asking it |",
        "|---|---|",
        *(f"| {t} | {asked.get(t, 0)} |" for t in mined.policy.template_ids),
        "",
        "Policy rows never mined (no dialogue asks the template; after it the top-k is the tie rule's: the "
        "templates asked most often, then by id): " + (", ".join(mined.policy.unmined_rows) or "none") + ".",
        "",
        f"Partial orders (share >= {settings.precedence_share}, support >= {settings.min_support}): "
        f"{len(mined.policy.partial_orders)} of {len(mined.pair_counts) // 2} co-asked template pairs.",
        "",
        "| before | after | support | share |",
        "|---|---|---|---|",
        *(f"| {o.before} | {o.after} | {o.support} | {o.share:.3f} |" for o in mined.policy.partial_orders),
        "",
        f"Empirical reference ({reference['method']}): Hit@{reference['k']} {reference['hit_at_k_mean']} "
        f"(mean over {reference['dialogues']} dialogues; {reference['hit_at_k_turns']} over "
        f"{reference['turns']} turns), POVR {reference['povr_mean']} (over {reference['povr_dialogues']} "
        "dialogues with an applicable pair).",
    ]
    return "\n".join(lines) + "\n"


def write_outputs(outputs: dict[str, str], out_dir: Path) -> None:
    """Write each output atomically (a temporary name, then a rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in outputs.items():
        temporary = out_dir / f".{name}.tmp"
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(out_dir / name)


@task
def mine_inquiry(corpora: str, out_dir: str, settings: MiningSettings) -> str:
    """Read the corpora under `corpora`, mine them, write the outputs to `out_dir`; return out_dir."""
    catalogue = load_catalogue(settings.catalogue_version)
    embed = litellm_embedder(settings.embedding_model) if settings.embedding_model else None
    space = TemplateSpace(catalogue, embed=embed)
    dialogues, _ = dialogues_with_doctor(read_corpora(Path(corpora)), Path(corpora))
    mined = mine(dialogues, space, settings)
    write_outputs(render_outputs(mined, settings), Path(out_dir))
    return out_dir
