"""The widening loaders read packages that `make install` installs (drugdose as a dependency, the other two
with --no-deps); the shipped KB loads without any of them."""

import subprocess
import sys

from tasks.benchmarks.consult.kb.loading import InteractionMerge, load_kb, merge_mcp_interactions
from tasks.benchmarks.consult.kb.models import Interaction
from tasks.benchmarks.consult.kb.widening import (
    McpPair,
    load_drugdose_limits,
    load_icd11_titles,
    load_mcp_brand_names,
    load_mcp_pairs,
)
from tests.tasks.benchmarks.consult.critic_fixtures import KB


def test_mcp_pairs_keep_every_name_and_map_severities():
    pairs = load_mcp_pairs()
    assert len(pairs) == 176
    assert pairs[0] == McpPair(
        names_a=("warfarin", "coumadin"), names_b=("aspirin", "acetylsalicylic acid"), severity="severe",
        effect="Significantly increased risk of major bleeding events including GI hemorrhage and "
        "intracranial bleeding.", source="drug-interaction-mcp (MIT): FDA Drug Label — Warfarin",
    )  # fmt: skip
    assert {pair.severity for pair in pairs} == {"severe", "moderate", None}


def mcp_pair(names_a, names_b, severity="severe"):
    return McpPair(names_a=names_a, names_b=names_b, severity=severity, effect="effect", source="mcp: label")


def test_mcp_pairs_merge_where_no_kb_rule_covers_them_with_counts():
    pairs = [
        mcp_pair(("warfarin", "coumadin"), ("ibuprofen", "advil")),  # the KB's nsaids / anticoagulants wins
        mcp_pair(("simvastatin",), ("erythromycin", "clarithromycin")),  # erythromycin is no KB drug
        mcp_pair(("grapefruit",), ("simvastatin",)),  # unknown
        mcp_pair(("warfarin",), ("cranberry",), severity=None),  # a caution pair: left out
        mcp_pair(("nsaid", "celecoxib"), ("doxycycline",), "moderate"),  # a class first: its KB drugs
        mcp_pair(("verapamil", "macrolides"), ("doxycycline",)),  # a class word further on is loose
        mcp_pair(("clarithromycin",), ("simvastatin",)),  # merged already
    ]
    assert merge_mcp_interactions(KB, pairs) == (
        (
            Interaction(a="simvastatin", b="clarithromycin", scope="drug", severity="severe", effect="effect",
                        source="mcp: label"),
            Interaction(a="ibuprofen", b="doxycycline", scope="drug", severity="moderate", effect="effect",
                        source="mcp: label"),
        ),
        InteractionMerge(installed=True, added=2, duplicates=2, unknown=2, left_out=1, interactions=2),
    )  # fmt: skip


def test_the_shipped_kb_merges_the_mcp_pairs_and_counts_them_all():
    kb = load_kb()
    merge = kb.mcp_merge
    assert (merge.installed, merge.added + merge.duplicates + merge.unknown + merge.left_out) == (True, 176)
    merged = kb.interaction("sulfamethoxazole", "methotrexate")
    assert (merged.severity, merged.source) == ("severe", "drug-interaction-mcp (MIT): FDA Drug Label")
    # a KB rule for the same pair wins: the drug pair's, or its classes' (erythromycin: a potent CYP3A4
    # inhibitor in the simvastatin advice, whose class rule covers atorvastatin too)
    assert kb.interaction("warfarin", "ibuprofen").source == "BNF: interactions of warfarin"
    assert kb.interaction("erythromycin", "atorvastatin").source.startswith(
        "MHRA Drug Safety Update August 2012"
    )


def test_mcp_brand_names_lead_to_generics():
    names = load_mcp_brand_names()
    assert (names["coumadin"], names["advil"]) == ("warfarin", "ibuprofen")


def test_drugdose_limits_cover_its_drugs():
    limits = load_drugdose_limits()
    assert len({limit.drug for limit in limits}) >= 45
    epinephrine_im = next(limit for limit in limits if limit.drug == "epinephrine" and limit.route == "IM")
    assert (epinephrine_im.max_single_dose_mg, epinephrine_im.child_max_single_dose_mg) == (0.5, 0.3)


def test_every_kb_condition_code_is_an_icd11_code_with_its_title():
    titles = load_icd11_titles()
    assert len(titles) > 30_000
    assert {(c.icd11, c.title) for c in load_kb().conditions} <= set(titles.items())


def test_shipped_kb_loads_without_the_optional_packages():
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'drug_interaction_mcp', 'drugdose', 'trytond'}:\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from tasks.benchmarks.consult.kb.icd11 import normalise_diagnosis\n"
        "from tasks.benchmarks.consult.kb.loading import load_kb\n"
        "print(normalise_diagnosis(load_kb(), 'hay fever', None).condition_id)\n"
        "print(load_kb().mcp_merge.model_dump_json())\n"
    )
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.splitlines()) == (
        0,
        [
            "allergic_rhinitis",
            '{"source":"drug-interaction-mcp","installed":false,"added":0,"duplicates":0,"unknown":0,'
            '"left_out":0,"interactions":0}',
        ],
    )
    assert "drug-interaction-mcp is not installed" in done.stderr
