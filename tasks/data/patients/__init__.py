"""Patient records as sources give them (FHIR R4, Synthea CSV, OMOP CDM), for every benchmark reading them."""
