"""Case builders of the SNOMED benchmark: FHIR bundles, Synthea CSV, OMOP CDM and the reference JSON.

Nothing is imported here: the command line reads the settings module alone when it starts."""
