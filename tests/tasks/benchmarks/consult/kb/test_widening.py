"""The widening loaders read packages that `make install` installs (drugdose as a dependency, the other two
with --no-deps); the shipped KB loads without any of them."""

import subprocess
import sys

from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.kb.widening import (
    load_drugdose_limits,
    load_icd11_titles,
    load_mcp_brand_names,
    load_mcp_interactions,
)


def test_mcp_interactions_become_kb_interactions():
    interactions = load_mcp_interactions()
    assert len(interactions) >= 100
    first = interactions[0]
    assert (first.a, first.b, first.scope, first.severity) == ("warfarin", "aspirin", "drug", "severe")
    assert all(item.source.startswith("drug-interaction-mcp (MIT)") for item in interactions)


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
    )
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "allergic_rhinitis")
