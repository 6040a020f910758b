"""Accounts and their flairs: patients, lay commenters, physicians (some once students), other
professionals, bots."""

import itertools
import random
from dataclasses import dataclass

from tasks.synth import text
from tasks.synth.timeline import utc

FLAIRS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "physician": (
        "Physician", "Physician ", "physician", "Physician | Moderator", "Physician | Top Contributor",
        "Physician | Moderator | Top Contributor", "Physician - Cardiology", "Physician - Cardiology ",
        "Physician - Emergency Medicine", "Physician - Internal Medicine", "Physician/Moderator",
        "Physician - ENT/Head &amp; Neck Surgery", "Physician | FM &amp; PHPM", "Verified Physician",
        "M.D.", "Doctor", "Dermatologist | Top Contributor", "Surgeon | Moderator", "Psychiatrist",
        "Radiologist", "Pediatrician",
    ),
    "physician_assistant": ("Physician Assistant", "Physician Associate (PA)", "Physicians Assistant"),
    "registered_nurse": ("Registered Nurse", " Registered Nurse", "Registered nurse", "RN"),
    "nurse_practitioner": ("Nurse Practitioner",),
    "pharmacist": ("Pharmacist", "PharmD"),
    "medical_student": ("Medical Student", "Medical student", "Med student"),
    "unverified": ("This user has not yet been verified.",),
    "layperson": (
        "Layperson/not verified as healthcare professional.",
        "Layperson/not verified as healthcare professional",
    ),
    "other": ("Test Flair - Physician", "Founder", "Web Developer"),
}  # fmt: skip
"""Every flair string the generator writes, raw as in the dumps (spaces and entities included), under
the role the seed table must give it. Designed outcomes depend only on physician versus the rest."""

PHYSICIAN_FLAIRS = frozenset(FLAIRS_BY_ROLE["physician"])

BOT_AUTHORS = ("AutoModerator", "RemindMeBot", "AmputatorBot", "WikiSummarizerBot")
"""Bot accounts that comment; AutoModerator also posts."""


@dataclass(frozen=True, slots=True)
class Person:
    """An account as shown on one comment; a physician who was a student shows `earlier_flair` before
    `flair_since`."""

    name: str
    flair: str | None = None
    earlier_flair: str | None = None
    flair_since: int = 0

    def flair_at(self, created: int) -> str | None:
        return self.earlier_flair if created < self.flair_since else self.flair


DELETED = Person("[deleted]")
AUTOMODERATOR = Person("AutoModerator")


class People:
    """Disjoint pools of accounts, so that a commenter is OP only where the generator means it."""

    def __init__(self, rng: random.Random, posts: int) -> None:
        sizes = (
            max(60, posts * 7 // 10),
            max(60, posts * 35 // 100),
            max(24, posts // 1500),
            max(24, posts // 1000),
        )
        names = text.usernames(rng, sum(sizes))
        ends = list(itertools.accumulate(sizes))
        self.patients = names[: ends[0]]
        self.lay = names[ends[0] : ends[1]]
        self.physicians = [_physician(rng, name) for name in names[ends[1] : ends[2]]]
        self.professionals = [_professional(rng, name) for name in names[ends[2] :]]


def _physician(rng: random.Random, name: str) -> Person:
    """Half use one of the four plain flairs; one in five was a medical student until some date."""
    flairs = FLAIRS_BY_ROLE["physician"]
    flair = rng.choice(flairs[:4] if rng.random() < 0.5 else flairs)
    if rng.random() < 0.2:
        since = rng.randrange(utc(2015, 6), utc(2022, 6))
        return Person(name, flair, rng.choice(FLAIRS_BY_ROLE["medical_student"]), since)
    return Person(name, flair)


def _professional(rng: random.Random, name: str) -> Person:
    roles = ("physician_assistant", "registered_nurse", "nurse_practitioner", "pharmacist",
             "medical_student", "other")  # fmt: skip
    return Person(name, rng.choice(FLAIRS_BY_ROLE[rng.choice(roles)]))
