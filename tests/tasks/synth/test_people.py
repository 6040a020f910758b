"""Accounts and flairs: physicians' flairs come from the shared list the flair_roles seed maps."""

import random

import pyarrow.parquet as pq

from tasks.synth.people import FLAIRS_BY_ROLE, People, Person
from tests.tasks.synth.dump_files import flair_of


def test_a_former_student_shows_the_student_flair_until_the_switch():
    person = Person("doc", "Physician", "Medical Student", flair_since=1000)
    assert (person.flair_at(999), person.flair_at(1000)) == ("Medical Student", "Physician")


def test_pools_are_disjoint_so_only_the_generator_makes_someone_op():
    people = People(random.Random(2), 3000)
    pools = [people.patients, people.lay, [p.name for p in people.physicians],
             [p.name for p in people.professionals]]  # fmt: skip
    names = [name for pool in pools for name in pool]
    assert len(names) == len(set(names)) and all(pools)


def test_designed_answers_carry_physician_flairs_from_the_shared_list(subreddit_dump, comments):
    answer_ids = {
        row["answer_id"] for row in pq.read_table(subreddit_dump / "truth" / "qa_pairs.parquet").to_pylist()
    }
    flairs = {flair_of(record) for record in comments if record["id"] in answer_ids}
    assert flairs and flairs <= set(FLAIRS_BY_ROLE["physician"])
    known = {flair for role in FLAIRS_BY_ROLE.values() for flair in role}
    assert {flair_of(record) for record in comments} - {None} <= known
