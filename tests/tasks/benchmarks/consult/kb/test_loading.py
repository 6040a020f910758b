import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from tasks.benchmarks.consult.kb.loading import data_dir, load_kb
from tasks.benchmarks.consult.kb.models import (
    TEMPLATE_IDS,
    AiuType,
    ChildPerKg,
    Contraindication,
    Dosing,
    Interaction,
    Regimen,
    Strength,
)

MINIMAL_FILES = {
    "aiu_types_v1.yaml": """
version: 1
aiu_types:
  - {id: nasal_congestion, category: symptom, template: ent, statement: "blocked nose for {value}",
     positive: "Blocked for {value}.", negative: "No.", source: "NICE CKS: Sinusitis"}
  - {id: facial_pain, category: symptom, template: location_radiation,
     statement: "facial pain over the {value}", positive: "It hurts over my {value}.", negative: "No.",
     source: "NICE CKS: Sinusitis"}
""",
    "conditions_v1.yaml": """
version: 1
conditions:
  - id: acute_sinusitis
    title: Acute sinusitis
    icd11: CA01
    department: ent
    severity: 1
    evidence: [{aiu: nasal_congestion, weight: 1.0}, {aiu: facial_pain, weight: 0.8}]
    mni: [nasal_congestion, facial_pain]
    regimen: {drug_classes: [penicillins], first_line: [{drug: amoxicillin, dose: 500, unit: mg,
              frequency_per_day: 3, days: 5, route: oral}], advice: Rest.}
    source: "NICE CKS: Sinusitis"
""",
    "drugs_v1.yaml": """
version: 1
classes: [{id: penicillins, title: Penicillins, source: "BNF: penicillins"}]
drugs:
  - {name: amoxicillin, brands: [Amoxil], drug_class: penicillins, route: oral,
     usual_dose: {dose: 500, unit: mg, frequency_per_day: 3}, max_daily: {adult: 3000},
     pregnancy: compatible, lactation: compatible, source: "BNF: amoxicillin"}
""",
    "interactions_v1.yaml": "version: 1\ninteractions: []\n",
    "contraindications_v1.yaml": "version: 1\ncontraindications: []\n",
    "dosing_v1.yaml": """
version: 1
dosing:
  - {drug: amoxicillin, strengths: [{form: capsule, amounts: [500, 250], unit: mg}],
     child_per_kg: {per_kg: 90, cap: 3000}, source: "BNF: amoxicillin"}
""",
    "products_v1.yaml": "version: 1\nproducts: []\n",
    "salts_v1.yaml": """
version: 1
salts:
  - {drug: amoxicillin, salt: trihydrate, factor: 1, source: "BNF: amoxicillin (as trihydrate)"}
aliases: [{alias: trihydrat, salt: trihydrate, source: "a misspelling"}]
unconverted: [{salt: butyrate, source: "BNF: hydrocortisone butyrate"}]
""",
}


def write_kb(folder: Path, **replacements: str) -> str:
    for name, text in {**MINIMAL_FILES, **replacements}.items():
        (folder / name).write_text(text, encoding="utf-8")
    return str(folder)


def test_unknown_mni_aiu_type_names_file_and_entry(tmp_path):
    aiu_types = MINIMAL_FILES["aiu_types_v1.yaml"].split("  - {id: facial_pain")[0]
    conditions = MINIMAL_FILES["conditions_v1.yaml"].replace(", {aiu: facial_pain, weight: 0.8}", "")
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"aiu_types_v1.yaml": aiu_types, "conditions_v1.yaml": conditions}))
    assert str(error.value) == (
        "conditions_v1.yaml: condition 'acute_sinusitis': mni refers to unknown AIU type 'facial_pain'"
    )


def test_invalid_field_names_file_entry_and_field(tmp_path):
    broken = MINIMAL_FILES["aiu_types_v1.yaml"].replace("template: ent", "template: earache")
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"aiu_types_v1.yaml": broken}))
    assert str(error.value) == (
        "aiu_types_v1.yaml: AIU type 'nasal_congestion': template: Value error, unknown template id 'earache'"
    )


def test_entry_without_source_is_rejected(tmp_path):
    broken = MINIMAL_FILES["drugs_v1.yaml"].replace(', source: "BNF: amoxicillin"', "")
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"drugs_v1.yaml": broken}))
    assert str(error.value) == "drugs_v1.yaml: drug 'amoxicillin': source: Field required"


def test_unknown_drug_in_interaction_names_the_pair(tmp_path):
    interactions = """
version: 1
interactions: [{a: amoxicillin, b: warfarin, scope: drug, effect: bleeding, source: "BNF: warfarin"}]
"""
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"interactions_v1.yaml": interactions}))
    assert str(error.value) == (
        "interactions_v1.yaml: interaction 'amoxicillin + warfarin': refers to unknown drug 'warfarin'"
    )


def test_a_pair_stated_again_in_reverse_is_a_load_error_naming_both_entries_and_sources(tmp_path):
    drugs = MINIMAL_FILES["drugs_v1.yaml"].replace(
        "drugs:\n",
        "drugs:\n  - {name: warfarin, drug_class: penicillins, route: oral, usual_dose: {dose: 5, unit: mg,\n"
        "     frequency_per_day: 1}, max_daily: {adult: 10}, pregnancy: avoid, lactation: compatible,\n"
        '     source: "BNF: warfarin"}\n',
    )
    interactions = """
version: 1
interactions:
  - {a: warfarin, b: amoxicillin, scope: drug, effect: bleeding, source: "BNF: interactions of warfarin"}
  - {a: amoxicillin, b: warfarin, scope: drug, effect: INR, severity: moderate, source: "BNF: amoxicillin"}
"""
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"drugs_v1.yaml": drugs, "interactions_v1.yaml": interactions}))
    assert str(error.value) == (
        "interactions_v1.yaml: interaction 'amoxicillin + warfarin' (moderate, source: BNF: amoxicillin) "
        "restates the pair of interaction 'warfarin + amoxicillin' (severe, source: BNF: interactions of "
        "warfarin): state each pair once"
    )


def test_a_moderate_drug_pair_does_not_hide_a_severe_class_pair(tmp_path):
    # Warfarin's bleeding risk rises with any NSAID (BNF: interactions of warfarin, NSAIDs: severe); an
    # entry for one NSAID's smaller INR effect is no reason to call the pair moderate.
    drugs = (
        MINIMAL_FILES["drugs_v1.yaml"]
        .replace(
            "classes: [",
            'classes: [{id: nsaids, title: NSAIDs, source: "BNF: NSAIDs"},\n'
            '  {id: anticoagulants, title: Anticoagulants, source: "BNF: anticoagulants"}, ',
        )
        .replace(
            "drugs:\n",
            "drugs:\n  - {name: ibuprofen, drug_class: nsaids, route: oral, usual_dose: {dose: 400,\n"
            "     unit: mg, frequency_per_day: 3}, max_daily: {adult: 2400}, pregnancy: avoid,\n"
            "     lactation: compatible,\n"
            '     source: "BNF: ibuprofen"}\n'
            "  - {name: warfarin, drug_class: anticoagulants, route: oral, usual_dose: {dose: 5, unit: mg,\n"
            "     frequency_per_day: 1}, max_daily: {adult: 10}, pregnancy: avoid, lactation: compatible,\n"
            '     source: "BNF: warfarin"}\n',
        )
    )
    interactions = """
version: 1
interactions:
  - {a: ibuprofen, b: warfarin, scope: drug, effect: INR, severity: moderate, source: "BNF: ibuprofen"}
  - {a: nsaids, b: anticoagulants, scope: class, effect: bleeding, source: "BNF: interactions of warfarin"}
"""
    kb = load_kb(1, write_kb(tmp_path, **{"drugs_v1.yaml": drugs, "interactions_v1.yaml": interactions}))
    found = kb.interaction("warfarin", "ibuprofen")
    assert (found.a, found.b, found.scope, found.severity) == ("nsaids", "anticoagulants", "class", "severe")


def product_file(entry: str) -> str:
    return f"version: 1\nproducts:\n  - {entry}\n"


def test_a_product_ingredient_must_be_a_kb_drug(tmp_path):
    products = product_file(
        '{name: co-amoxiclav, ingredients: [amoxicillin, clavulanic acid], source: "BNF: co-amoxiclav"}'
    )
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"products_v1.yaml": products}))
    assert str(error.value) == (
        "products_v1.yaml: product 'co-amoxiclav': ingredient refers to unknown drug 'clavulanic acid'"
    )


def test_a_product_name_taken_by_a_drug_is_a_load_error(tmp_path):
    drugs = MINIMAL_FILES["drugs_v1.yaml"] + (
        "  - {name: codeine, drug_class: penicillins, route: oral, usual_dose: {dose: 30, unit: mg,\n"
        "     frequency_per_day: 4}, max_daily: {adult: 240}, pregnancy: caution, lactation: avoid,\n"
        '     source: "BNF: codeine"}\n'
    )
    products = product_file(
        "{name: codamox, ingredients: [codeine, amoxicillin],"
        ' variants: [{strengths: [8, 500], brands: [amoxil]}], source: "a label"}'
    )
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"drugs_v1.yaml": drugs, "products_v1.yaml": products}))
    assert str(error.value) == (
        "products_v1.yaml: product 'codamox': name 'amoxil' is already a name of drug 'amoxicillin'"
    )


def test_a_product_variant_gives_one_strength_per_ingredient(tmp_path):
    products = product_file(
        "{name: co-amoxiclav, ingredients: [amoxicillin, clavulanic acid],"
        ' variants: [{strengths: [500, 125, 1]}], source: "BNF: co-amoxiclav"}'
    )
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"products_v1.yaml": products}))
    assert str(error.value) == (
        "products_v1.yaml: product 'co-amoxiclav': entry: Value error, variant 500/125/1 gives 3 strengths "
        "for 2 ingredients"
    )


def test_missing_file_is_named(tmp_path):
    folder = write_kb(tmp_path)
    (tmp_path / "drugs_v1.yaml").unlink()
    with pytest.raises(ValueError, match=r"^drugs_v1\.yaml: file not found"):
        load_kb(1, folder)


def test_minimal_kb_loads_with_lookups(tmp_path):
    kb = load_kb(1, write_kb(tmp_path))
    assert kb.condition_by_code(" ca01 ").id == "acute_sinusitis"
    assert kb.drug("AMOXIL").name == "amoxicillin"
    assert [aiu.id for aiu in kb.aiu_types_for_template("ent")] == ["nasal_congestion"]


def test_dosing_is_loaded_by_drug_with_strengths_sorted(tmp_path):
    kb = load_kb(1, write_kb(tmp_path))
    assert kb.dosing_of("amoxicillin") == Dosing(
        drug="amoxicillin",
        strengths=(Strength(form="capsule", amounts=(250.0, 500.0), unit="mg"),),
        child_per_kg=ChildPerKg(per_kg=90, cap=3000),
        source="BNF: amoxicillin",
    )
    assert kb.dosing_of("paracetamol") is None


@pytest.mark.parametrize(
    ("dosing", "message"),
    [
        (
            '[{drug: warfarin, weekly: {maximum: 25}, source: "BNF: warfarin"}]',
            "dosing_v1.yaml: dosing 'warfarin': refers to unknown drug 'warfarin'",
        ),
        (
            "[{drug: amoxicillin, weekly: {maximum: 25}}]",
            "dosing_v1.yaml: dosing 'amoxicillin': source: Field required",
        ),
        (
            "[{drug: amoxicillin, strengths: [{form: capsule, amounts: [250], unit: mg}, "
            '{form: capsule, amounts: [500], unit: mg}], source: "BNF: amoxicillin"}]',
            "dosing_v1.yaml: dosing 'amoxicillin': entry: Value error, a form is listed twice under "
            "strengths",
        ),
        (
            '[{drug: amoxicillin, strengths: [{form: tablet, amounts: [0], unit: mg}], source: "BNF"}]',
            "dosing_v1.yaml: dosing 'amoxicillin': strengths.0.amounts: Value error, amounts must be above 0",
        ),
    ],
)
def test_a_dosing_entry_the_loader_rejects(tmp_path, dosing, message):
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"dosing_v1.yaml": f"version: 1\ndosing: {dosing}\n"}))
    assert str(error.value) == message


def test_strengths_for_a_drug_not_dosed_by_mass_are_rejected(tmp_path):
    drugs = MINIMAL_FILES["drugs_v1.yaml"].replace("unit: mg,", "unit: application,")
    conditions = MINIMAL_FILES["conditions_v1.yaml"].replace("unit: mg,", "unit: application,")
    files = {"drugs_v1.yaml": drugs, "conditions_v1.yaml": conditions}
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **files))
    assert str(error.value) == (
        "dosing_v1.yaml: dosing 'amoxicillin': strengths for a drug dosed in 'application', not a mass"
    )


def test_duplicate_mni_item_is_rejected(tmp_path):
    broken = MINIMAL_FILES["conditions_v1.yaml"].replace("facial_pain]", "nasal_congestion]")
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"conditions_v1.yaml": broken}))
    assert str(error.value) == (
        "conditions_v1.yaml: condition 'acute_sinusitis': mni: Value error, mni lists an AIU type twice"
    )


def test_models_are_frozen_and_check_single_entries():
    regimen = Regimen(advice="Rest and fluids.")
    with pytest.raises(ValidationError):
        regimen.advice = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="drug_classes given without any first_line option"):
        Regimen(drug_classes=("penicillins",), advice="Rest.")
    with pytest.raises(ValidationError, match=r"statement has no \{value\} slot"):
        AiuType(id="fever", category="symptom", template="fever_chills", statement="fever", positive="Yes.",
                negative="No.", source="NICE NG143")  # fmt: skip
    with pytest.raises(ValidationError, match="give exactly one of drug, drug_class"):
        Contraindication(drug="aspirin", drug_class="nsaids", aiu="pregnancy", level="absolute", reason="x",
                         source="BNF: aspirin")  # fmt: skip


def test_shipped_kb_meets_the_spec_counts():
    kb = load_kb()
    assert len(kb.conditions) >= 30
    assert len({condition.department for condition in kb.conditions}) >= 8
    for condition in kb.conditions:
        assert condition.icd11 and condition.source and condition.regimen.advice, condition.id
        assert 2 <= len(set(condition.mni)) <= 5, condition.id
    first_line = {option.drug for condition in kb.conditions for option in condition.regimen.first_line}
    assert first_line <= {drug.name for drug in kb.drugs}
    assert all(drug.max_daily.adult or drug.max_daily.child for drug in kb.drugs)
    assert {aiu.template for aiu in kb.aiu_types} <= TEMPLATE_IDS


def test_shipped_kb_is_cached():
    assert load_kb() is load_kb(1)


def test_shipped_kb_copy_loads_from_a_folder(tmp_path):
    for path in data_dir().glob("*_v1.yaml"):
        shutil.copy(path, tmp_path / path.name)
    assert len(load_kb(1, str(tmp_path)).conditions) == len(load_kb().conditions)


def test_interaction_lookup_is_symmetric_by_drug_then_class():
    kb = load_kb()
    by_drug = kb.interaction("clarithromycin", "Zocor")
    assert (by_drug.a, by_drug.b, by_drug.scope) == ("clarithromycin", "simvastatin", "drug")
    assert kb.interaction("Zocor", "clarithromycin") == by_drug
    by_class = kb.interaction("Nurofen", "coumadin")
    assert (by_class.a, by_class.b, by_class.scope) == ("nsaids", "anticoagulants", "class")
    assert kb.interaction("warfarin", "ibuprofen") == by_class
    assert kb.interaction("amoxicillin", "paracetamol") is None
    assert kb.interaction("amoxicillin", "unknownium") is None


def test_template_ids_match_the_inquiry_catalogue_when_present():
    catalogue = Path(__file__).parents[5] / "tasks/benchmarks/consult/inquiry/data/templates_v1.yaml"
    if not catalogue.exists():
        pytest.skip("the inquiry template catalogue is built on another branch")
    import yaml

    document = yaml.safe_load(catalogue.read_text(encoding="utf-8"))
    templates = document.get("templates", document)
    ids = {item["id"] for item in templates} if isinstance(templates, list) else set(templates)
    assert ids == TEMPLATE_IDS


def test_a_further_class_of_a_drug_must_be_a_known_class(tmp_path):
    drugs = MINIMAL_FILES["drugs_v1.yaml"].replace("drug_class: penicillins,", "drug_class: penicillins, "
                                                    "classes: [qt_prolonging],")  # fmt: skip
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"drugs_v1.yaml": drugs}))
    assert str(error.value) == (
        "drugs_v1.yaml: drug 'amoxicillin': classes refers to unknown class 'qt_prolonging'"
    )


@pytest.mark.parametrize(
    ("classes", "message"),
    [
        ("[{id: penicillins, title: Penicillins, terms: [Amoxil], source: BNF}]",
         "drug class 'penicillins': term 'Amoxil' names the drug 'amoxicillin'"),
        ("[{id: penicillins, title: Penicillins, source: BNF}, {id: beta_lactams, title: Beta-lactams, "
         "terms: [penicillin], source: BNF}]",
         "drug class 'beta_lactams': name 'penicillin' already names class 'penicillins'"),
    ],
)  # fmt: skip
def test_a_class_term_names_one_class_and_no_drug(tmp_path, classes, message):
    drugs = MINIMAL_FILES["drugs_v1.yaml"].replace(
        '[{id: penicillins, title: Penicillins, source: "BNF: penicillins"}]', classes
    )
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"drugs_v1.yaml": drugs}))
    assert str(error.value) == f"drugs_v1.yaml: {message}"


def test_a_class_is_named_by_its_id_title_and_terms_also_in_the_singular():
    kb = load_kb()
    names = ("NSAID", "non-steroidal anti-inflammatory drugs", "Anti-inflammatories", "sulpha", "SSRI",
             "fluoroquinolone", "proton pump inhibitor", "latex")  # fmt: skip
    assert [getattr(kb.drug_class_named(name), "id", None) for name in names] == [
        "nsaids", "nsaids", "nsaids", "sulfonamides", "ssris", "quinolones", "proton_pump_inhibitors", None,
    ]  # fmt: skip


def test_a_drug_class_rule_may_pair_a_class_with_itself_but_a_drug_not_with_itself():
    assert Interaction(a="nsaids", b="nsaids", scope="class", effect="x", source="BNF").a == "nsaids"
    with pytest.raises(ValidationError, match="interacts with itself"):
        Interaction(a="warfarin", b="warfarin", scope="drug", effect="x", source="BNF")
