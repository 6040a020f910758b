"""The SNOMED paper's patient oracle, its training data: teacher-written question/answer pairs per case."""
