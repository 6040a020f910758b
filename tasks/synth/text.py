"""Vocabulary and text of the synthetic r/AskDocs dumps (see tasks/synth/README.md).

A post is written from a `Case`: one topic (a condition with its body parts, symptoms, tests and drugs)
and the facts picked from it. The post, the OP's follow-ups and the physicians' answers are all filled
from the same case, so a thread stays on topic and a physician's first answer shares words with the
question (what branch selection measures). Texts are templates, cheap to fill, and carry URLs, e-mails
or phone numbers only where `spice` adds them, so callers keep them out of texts whose cleaning must be
unambiguous. Lengths are tuned to Table 1 of the paper (cl100k tokens: posts ~410, follow-ups ~31,
answers ~72).
"""

import random
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Topic:
    condition: str
    specialty: str
    parts: tuple[str, ...]
    symptoms: tuple[str, ...]
    tests: tuple[str, ...]
    drugs: tuple[str, ...]


TOPICS = (
    Topic("a migraine", "neurology", ("head", "temples", "left eye"),
          ("throbbing headache", "sensitivity to light", "nausea", "blurred vision", "visual aura"),
          ("MRI", "CT scan", "eye exam"),
          ("sumatriptan", "ibuprofen", "propranolol", "topiramate")),
    Topic("acid reflux", "gastroenterology", ("chest", "throat", "upper stomach"),
          ("burning chest pain", "sour taste", "trouble swallowing", "constant burping", "hoarse voice"),
          ("endoscopy", "H. pylori breath test", "barium swallow"),
          ("omeprazole", "famotidine", "pantoprazole")),
    Topic("costochondritis", "family medicine", ("sternum", "ribs", "chest wall"),
          ("sharp chest pain", "pain when breathing deeply", "tenderness when pressing", "chest tightness"),
          ("ECG", "chest x-ray", "troponin test"),
          ("ibuprofen", "naproxen", "diclofenac gel")),
    Topic("benign palpitations", "cardiology", ("heart", "chest", "neck"),
          ("racing heart", "skipped beats", "fluttering", "shortness of breath", "lightheadedness"),
          ("ECG", "Holter monitor", "echocardiogram", "thyroid panel"),
          ("propranolol", "metoprolol", "sertraline")),
    Topic("a urinary tract infection", "urology", ("bladder", "lower abdomen", "kidneys"),
          ("burning when I pee", "frequent urination", "cloudy urine", "flank pain", "pelvic pressure"),
          ("urinalysis", "urine culture", "kidney ultrasound"),
          ("nitrofurantoin", "cephalexin", "ciprofloxacin")),
    Topic("contact dermatitis", "dermatology", ("hands", "forearms", "neck", "eyelids"),
          ("itchy rash", "red patches", "dry flaky skin", "small blisters", "cracked skin"),
          ("patch test", "skin biopsy", "skin scraping"),
          ("hydrocortisone cream", "triamcinolone", "cetirizine")),
    Topic("a reactive lymph node", "internal medicine", ("neck", "jaw", "armpit", "groin"),
          ("swollen lymph node", "pea sized lump", "tender lump", "night sweats"),
          ("ultrasound", "CBC", "fine needle biopsy"),
          ("amoxicillin", "ibuprofen")),
    Topic("irritable bowel syndrome", "gastroenterology", ("stomach", "lower abdomen", "bowels"),
          ("bloating", "cramping", "diarrhea", "constipation", "mucus in stool"),
          ("colonoscopy", "stool test", "celiac panel", "CBC"),
          ("loperamide", "peppermint oil", "dicyclomine")),
    Topic("sciatica", "orthopedics", ("lower back", "left leg", "right hip", "buttock"),
          ("shooting pain", "numbness", "tingling", "stiffness", "weakness in my foot"),
          ("MRI", "lumbar x-ray", "nerve conduction study"),
          ("naproxen", "gabapentin", "cyclobenzaprine")),
    Topic("hypothyroidism", "endocrinology", ("neck", "thyroid"),
          ("fatigue", "weight gain", "hair loss", "feeling cold all the time", "brain fog"),
          ("TSH", "free T4", "thyroid ultrasound", "TPO antibodies"),
          ("levothyroxine",)),
    Topic("iron deficiency anemia", "hematology", ("whole body",),
          ("fatigue", "pale skin", "shortness of breath", "cold hands", "heavy periods"),
          ("CBC", "ferritin", "iron panel", "B12 level"),
          ("ferrous sulfate", "iron supplements")),
    Topic("asthma", "pulmonology", ("lungs", "chest", "airways"),
          ("wheezing", "dry cough", "shortness of breath", "chest tightness", "coughing at night"),
          ("spirometry", "chest x-ray", "peak flow test"),
          ("albuterol", "prednisone", "budesonide")),
    Topic("tendinitis", "sports medicine", ("wrist", "elbow", "shoulder", "knee"),
          ("pain when lifting", "swelling", "clicking", "weak grip", "stiffness in the morning"),
          ("x-ray", "MRI", "ultrasound"),
          ("ibuprofen", "naproxen", "diclofenac gel")),
    Topic("a kidney stone", "urology", ("right flank", "lower back", "groin"),
          ("sharp flank pain", "blood in my urine", "nausea", "pain that comes in waves"),
          ("CT scan", "urinalysis", "kidney ultrasound"),
          ("tamsulosin", "ketorolac", "oxycodone")),
    Topic("an atypical mole", "dermatology", ("back", "shoulder", "calf", "scalp"),
          ("changing mole", "dark spot", "irregular border", "itchy mole", "mole that bleeds"),
          ("dermoscopy", "excision biopsy", "skin check"),
          ("none",)),
    Topic("tinnitus", "ENT", ("left ear", "right ear", "both ears"),
          ("ringing in my ear", "muffled hearing", "ear fullness", "ear pain", "dizziness"),
          ("hearing test", "tympanometry", "MRI"),
          ("prednisone", "ear drops", "amoxicillin")),
    Topic("chronic sinusitis", "ENT", ("sinuses", "nose", "forehead", "cheeks"),
          ("congestion", "facial pressure", "post nasal drip", "loss of smell", "thick mucus"),
          ("CT of the sinuses", "nasal endoscopy", "allergy test"),
          ("fluticasone", "saline rinse", "amoxicillin")),
    Topic("BPPV vertigo", "neurology", ("head", "inner ear"),
          ("room spinning", "dizziness when I roll over", "nausea", "unsteady walking"),
          ("Dix-Hallpike test", "MRI", "hearing test"),
          ("meclizine", "ondansetron")),
    Topic("gout", "rheumatology", ("big toe", "ankle", "foot", "knee"),
          ("swollen toe", "red hot joint", "joint pain at night", "can't put weight on it"),
          ("uric acid level", "joint aspiration", "x-ray"),
          ("colchicine", "allopurinol", "indomethacin")),
    Topic("prediabetes", "endocrinology", ("whole body",),
          ("constant thirst", "frequent urination", "blurry vision", "tingling feet", "fatigue after meals"),
          ("HbA1c", "fasting glucose", "glucose tolerance test"),
          ("metformin",)),
    Topic("high blood pressure", "cardiology", ("head", "chest"),
          ("morning headaches", "high readings", "pounding in my ears", "nosebleeds"),
          ("blood pressure monitoring", "BMP", "urinalysis", "ECG"),
          ("lisinopril", "amlodipine", "losartan")),
    Topic("a blood clot", "hematology", ("left calf", "right calf", "leg"),
          ("calf swelling", "calf pain", "warm skin", "redness behind the knee"),
          ("D-dimer", "leg ultrasound", "CT angiogram"),
          ("apixaban", "rivaroxaban", "heparin")),
    Topic("an ovarian cyst", "gynecology", ("pelvis", "lower abdomen", "right side"),
          ("pelvic pain", "spotting", "irregular periods", "pain during sex", "bloating"),
          ("pelvic ultrasound", "pregnancy test", "hCG level"),
          ("birth control", "ibuprofen", "naproxen")),
    Topic("strep throat", "family medicine", ("throat", "tonsils", "neck"),
          ("sore throat", "white spots on my tonsils", "fever", "painful swallowing", "swollen glands"),
          ("rapid strep test", "throat culture", "mono test"),
          ("penicillin", "amoxicillin", "azithromycin")),
    Topic("a concussion", "neurology", ("head", "forehead", "back of my head"),
          ("headache after the fall", "confusion", "memory gaps", "nausea", "trouble focusing"),
          ("CT scan", "MRI", "neuro exam"),
          ("acetaminophen",)),
    Topic("hemorrhoids", "general surgery", ("rectum", "bottom"),
          ("bright red blood on the paper", "itching", "painful lump", "pain when sitting"),
          ("rectal exam", "anoscopy", "colonoscopy"),
          ("hydrocortisone cream", "fiber supplements", "witch hazel")),
    Topic("a pinched nerve", "orthopedics", ("neck", "shoulder", "right arm", "fingers"),
          ("numbness", "tingling in my fingers", "arm weakness", "neck stiffness", "burning pain"),
          ("MRI", "EMG", "cervical x-ray"),
          ("gabapentin", "prednisone", "meloxicam")),
    Topic("conjunctivitis", "ophthalmology", ("left eye", "right eye", "eyelid"),
          ("red eye", "crusty discharge", "eye pain", "floaters", "blurry vision"),
          ("slit lamp exam", "eye pressure test", "eye swab"),
          ("antibiotic eye drops", "artificial tears")),
    Topic("fatty liver", "hepatology", ("right upper abdomen", "liver"),
          ("elevated ALT", "dull ache under my ribs", "fatigue", "dark urine"),
          ("liver panel", "abdominal ultrasound", "FibroScan", "hepatitis panel"),
          ("vitamin E", "none")),
    Topic("plantar fasciitis", "podiatry", ("heel", "foot", "arch"),
          ("heel pain in the morning", "pain after standing", "stabbing pain", "tight calves"),
          ("x-ray", "ultrasound"),
          ("ibuprofen", "night splint", "steroid injection")),
)  # fmt: skip

DURATIONS = ("3 days", "a week", "10 days", "2 weeks", "3 weeks", "a month", "6 weeks", "2 months",
             "3 months", "6 months", "a year", "2 years")  # fmt: skip
TRIGGERS = ("a bad cold", "starting a new job", "a long flight", "lifting weights", "a stomach bug",
            "switching birth control", "a car accident", "running a half marathon", "moving house",
            "getting my covid booster", "a course of antibiotics", "a very stressful month")  # fmt: skip
RELATIVES = ("mom", "dad", "aunt", "grandmother", "older brother", "uncle", "best friend")
SERIOUS = ("cancer", "a stroke", "a heart attack", "MS", "lymphoma", "a brain tumor", "kidney failure")
JOBS = ("as a nurse", "in retail", "from home", "in construction", "night shifts in a warehouse",
        "as a teacher", "in an office")  # fmt: skip
RED_FLAGS = ("chest pain", "trouble breathing", "a fever over 39", "weakness on one side", "fainting",
             "blood in your vomit", "sudden severe pain")  # fmt: skip
FINDINGS = ("slightly elevated", "borderline low", "within normal limits", "mildly abnormal",
            "non specific changes", "a small cyst")  # fmt: skip
HISTORY = ("none", "anxiety", "asthma", "PCOS", "hypothyroidism", "ADHD", "migraines", "depression")
MEDS = ("none", "birth control", "sertraline 50mg", "vyvanse", "levothyroxine", "multivitamin",
        "lisinopril 10mg", "none really")  # fmt: skip
RACES = ("White", "Black", "Asian", "Hispanic", "Mixed", "Indian")
EMOJI = ("😅", "🙏", "😭", "😬", "🤷", "❤️", "😩")

TITLE_TEMPLATES = (
    "{Symptom} in my {part} for {duration}, should I be worried?",
    "{age}{sx} - {symptom} and {symptom2}, what could this be?",
    "Is {symptom} after {trigger} normal?",
    "Worried about {symptom} in my {part}",
    "{Drug} not helping with my {symptom}",
    "{Symptom} for {duration} and doctors can't figure it out",
    "Should I go to the ER for {symptom}?",
    "Got my {test} back, can someone help me understand it?",
    "{Symptom} and {symptom2} since {trigger}",
    "Could this be {condition}? {age}{sx}",
)
DEMOGRAPHIC_TEMPLATES = (
    "{age}{sx}, {feet}'{inches}, {pounds} lbs",
    "{sx}{age}, {feet}'{inches}, {pounds}lbs, non smoker",
    "{age} year old {sex}, {cm} cm, {kg} kg, {meds}",
    "Age: {age}\nSex: {Sex}\nHeight: {feet}'{inches}\nWeight: {pounds} lbs\nRace: {race}\n"
    "Duration of complaint: {duration}\nLocation: {part}\nExisting medical issues: {history}\n"
    "Current medications: {meds}",
)
POST_SENTENCES = (
    "For the past {duration} I have had {symptom} in my {part}.",
    "It started about {duration} ago, right after {trigger}.",
    "The {symptom} gets worse at night and when I lie down.",
    "A few days later I also noticed {symptom2}.",
    "I went to urgent care and they did a {test}, which apparently came back normal.",
    "My GP put me on {drug} but honestly it has not helped much.",
    "I have been taking {drug} for {duration} without any real change.",
    "No fever, no recent travel, and nobody else at home is sick.",
    "I am really anxious about this because my {relative} had {serious}.",
    "I can't get an appointment with my regular doctor for another month.",
    "On a scale of 1 to 10 the pain is about a {pain}, sometimes worse.",
    "It comes and goes, usually lasting {minutes} minutes at a time.",
    "I work {job}, so I can't really take time off to rest.",
    "I tried heat, ice, stretching and rest and nothing seems to make a difference.",
    "Google says it could be anything from {condition} to {serious}, which is not helping my anxiety.",
    "The {symptom} is worst in the morning and slowly eases during the day.",
    "I don't drink much, maybe a glass of wine on the weekend, and I have never smoked.",
    "My {test} last year was fine, but that was before any of this started.",
    "The urgent care doctor said it was probably {condition} and to give it time.",
    "I also have {history}, if that matters at all.",
    "My sleep has been terrible since this started and I feel exhausted all the time.",
    "When I press on my {part} it feels tender and a bit swollen.",
    "I have lost about {kilos} kg without trying over the last few months.",
    "Both of my parents have high blood pressure and my {relative} has diabetes.",
    "I'm not sure if the {symptom2} is related or just a coincidence.",
    "My partner thinks I am overreacting but it really feels like something is wrong.",
    "I am scheduled for a {test} next week but I am not sure I should wait that long.",
    "Is {symptom} something that can be caused by {drug}?",
    "What could be causing the {symptom}, and should I push for a {test}?",
    "Should I go to the ER tonight or can this wait until I see my doctor?",
    "Sorry for the long post, I just want to know whether this is something serious.",
    "Any advice would be appreciated, thank you so much for reading.",
    "Last night my temperature was 38.1°C and I felt awful, but this morning it was back to normal.",
    "I have been drinking a lot more water and cut out coffee, which did not change anything.",
    "The {symptom} wakes me up at night at least two or three times a week now.",
    "My blood work from a few months ago showed everything in range except a slightly low vitamin D.",
    "I have not had any surgeries and I am up to date on my vaccines.",
    "I took a few days off work to rest but the {symptom2} came back as soon as I went back.",
    "My mom keeps telling me it is just stress, and maybe she is right, but it has been {duration} now.",
    "I saw a physical therapist once and she said my posture was part of the problem.",
    "I am worried because I read that {symptom} can be an early sign of {serious}.",
    "Over the counter painkillers take the edge off for a couple of hours and then it comes back.",
    "I do not have insurance right now, so I would rather not go to the ER unless I really need to.",
    "The {symptom} started on one side and over the last week it seems to have spread.",
    "I exercise three or four times a week, mostly running and some weights, and eat fairly healthy.",
    "There is no swelling or redness that I can see, but it feels warm to the touch sometimes.",
    "I had a similar episode about two years ago that went away on its own after a few weeks.",
    "Could the {drug} be making it worse, or is that just a coincidence?",
    "My resting heart rate is usually &lt; 70, but lately it is often &gt; 100 when I stand up.",
)
FOLLOW_UP_CONTEXT = (
    "It has been getting a little better since yesterday, but the {symptom} is still there.",
    "My GP is away until next week, so I cannot ask him until then.",
    "I also read online that {symptom2} can be a sign of {serious}, which scared me.",
    "For context, I have been taking the {drug} every day exactly as prescribed.",
    "The {symptom} is worse in the evening and after I have been on my feet all day.",
    "I just want to be sure I am not missing something important here.",
    "Sorry if this is a silly question, I have really bad health anxiety.",
    "My partner noticed it too and thinks it looks worse than last week.",
)
FOLLOW_UP_TEMPLATES = (
    "Thank you for answering! Does the {symptom2} change anything, or is it still most likely {condition}?",
    "Thanks doctor. Should I stop taking the {drug} in the meantime?",
    "How long should I wait before going back if the {symptom} does not improve?",
    "I forgot to mention I also have {symptom2}. Does that make it more serious?",
    "Update: the {test} came back {finding}. What does that mean for me?",
    "Would a {test} be worth asking for, or would that be overkill at this point?",
    "Okay that makes sense. Is there anything I can do at home for the {symptom}?",
    "Is it safe to keep working out while this is going on?",
    "My doctor wants to wait and see, but the {symptom} is getting worse. Should I get a second opinion?",
    "Sorry, one more question: is this something that could come back later?",
    "Thank you so much. Would {specialty} be the right kind of specialist to see for this?",
    "It has now been {duration} and the {symptom} is still there. Is that still normal?",
)
ANSWER_OPENERS = (
    "{Symptom} in the {part} for {duration} is most often {condition}, and that is not dangerous.",
    "From what you describe this sounds like {condition} to me.",
    "The combination of {symptom} and {symptom2} in your {part} fits {condition} best.",
    "Most likely {condition}. The {symptom} you describe is a typical presentation.",
)
ANSWER_SENTENCES = (
    "A normal {test} is reassuring and rules out most of the serious causes.",
    "I would give the {drug} another two weeks at the full dose before calling it a failure.",
    "If you develop {red_flag}, go to the ER.",
    "It would be reasonable to ask your GP for a {test}.",
    "Take it with food and do not go above the dose on the label.",
    "No, that does not change my answer.",
    "Yes, that is safe to continue for now.",
    "See {specialty} if it persists beyond {duration}.",
    "Your age and history make anything serious very unlikely.",
    "This usually settles on its own within a few weeks.",
    "Keep a diary of when the {symptom} happens, it helps whoever examines you.",
    "There is no need for the ER unless it gets suddenly worse.",
    "The {symptom2} is very common with this and usually improves at the same pace.",
    "I would not stop the {drug} on your own, talk to whoever prescribed it first.",
    "Blood tests are unlikely to show anything here, the diagnosis is made on the history and exam.",
    "Sleep, regular meals and gentle exercise genuinely help more than most people expect.",
)
GENERIC_ANSWERS = (  # off-topic: they share only common words with a question
    "Nobody on the internet can examine you. Book an appointment with someone who can see this in "
    "person, that is the only way to get a real answer.",
    "This needs an in person assessment. Please get seen by your own GP this week rather than waiting "
    "for strangers online to guess.",
    "Impossible to say without seeing it. Go and get checked, and bring a list of every medication and "
    "supplement you use.",
    "I would not rely on Reddit for this one. Call your provider tomorrow morning and ask for the next "
    "available slot.",
)
LAY_TEMPLATES = (
    "I had something really similar last year and it turned out to be {condition}, hope you feel better!",
    "Not a doctor but that sounds a lot like {condition}. Get it checked.",
    "Go to the ER, better safe than sorry.",
    "Following because I have the exact same problem with my {part}.",
    "Same here!! Did you ever figure out what it was?",
    "My {relative} had this and the {drug} fixed it within a week.",
    "Drink more water and get some sleep lol",
    "Sending hugs, health anxiety is the worst {emoji}",
    "Have you tried cutting out caffeine? Made a huge difference for my {symptom}.",
    "Ask for a {test}, that is how they found mine.",
    "How long did the {symptom} last for you?",
    "This sub is for verified professionals to answer, but I hope you get some help.",
    "Hope it turns out to be nothing &lt;3",
    "&gt; {symptom}\n\nSame thing happened to me, it went away after {duration}.",
)
OP_REPLY_TEMPLATES = (
    "Thanks, I will ask my doctor about {condition}.",
    "It has been {duration} now and it is still there unfortunately.",
    "I did have a {test} already and it was normal.",
    "Thank you, that makes me feel a lot better {emoji}",
    "I'm not taking anything except {drug}.",
    "&gt; {condition}\n\nThat is what my GP said too, thank you.",
)
SHORT_THANKS = ("Thanks doc!", "Thank you!!", "ty", "Will do, thanks!", "Thank you 🙏", "Okay thanks")
SHORT_PHYSICIAN = ("Glad to help.", "Yes.", "No, that's fine.", "See your GP.", "Correct.", "Anytime!")
SHORT_TITLES = ("Is this normal?", "Rash??", "Help please", "Mole pic")
FLAT_OPENERS = ("Hi,", "Hello everyone,", "Throwaway because my family follows me.", "Long time lurker here.")
MODERATOR_NOTICE = ("Please keep follow-up questions in this thread and do not send private messages to "
                    "the verified users who answer here.")  # fmt: skip
BOT_FOOTER = (
    "\n\n*I am a bot, and this action was performed automatically. Please [contact the moderators of this "
    "subreddit](/message/compose/?to=/r/{sub}) if you have any questions or concerns.*"
)
AUTOMOD_STICKY = (
    "Thank you for your submission to r/{sub}! Please make sure your post includes your age, sex, height, "
    "weight, race, duration of complaint, location, existing medical issues and current medications. "
    "Posts that do not contain enough information may be removed." + BOT_FOOTER
)
AUTOMOD_REMOVAL = (
    "Your post has been removed due to insufficient demographic information. Please repost with your age, "
    "sex, height, weight, race, duration of complaint and current medications." + BOT_FOOTER
)
AUTOMOD_THREAD = ("Weekly general discussion and questions thread",
                  "Use this thread for questions that do not need a verified answer. Be kind.")  # fmt: skip
BOT_TEXTS = {
    "RemindMeBot": "I will be messaging you in 2 days on [**{when} UTC**](http://www.wolframalpha.com/input/"
    "?i={when}&amp;x=1) to remind you of [**this link**](https://www.reddit.com/r/{sub}/comments/{post}/)",
    "AmputatorBot": "It looks like you shared an AMP link. These should load faster, but AMP is "
    "controversial. Maybe check out **the canonical page** instead: https://www.cdc.gov/flu/",
    "WikiSummarizerBot": "**Costochondritis** Costochondritis is an inflammation of the junctions where the "
    "upper ribs join with the cartilage that holds them to the breastbone. ^[F.A.Q](https://www.reddit.com"
    "/r/WikiSummarizer/wiki/index)",
}
LINK_SNIPPETS = (
    "Pics here: https://imgur.com/a/{0}",
    "[photo of it](https://i.imgur.com/{0}.jpg)",
    "I read about it on www.webmd.com/a-to-z-guides/{0} too.",
    "You can reach me at {0}.health@gmail.com if needed.",
    "My clinic's number is (555) 014-3827.",
)

ADJECTIVES = ("Ok", "Happy", "Quiet", "Brave", "Silly", "Lucky", "Tired", "Hungry", "Fluffy", "Sharp",
              "Green", "Rare", "Cold", "Witty", "Lazy", "Gentle", "Rapid", "Salty", "Sweet", "Bitter",
              "Cosmic", "Grumpy", "Noble", "Odd", "Proud", "Sleepy", "Spicy", "Wild", "Zealous",
              "Purple")  # fmt: skip
NOUNS = ("Breakfast", "Panda", "Otter", "Cactus", "Kettle", "Falcon", "Pickle", "Lantern", "Badger",
         "Muffin", "Walrus", "Comet", "Cloud", "Pepper", "Maple", "Turnip", "Raven", "Tiger", "Biscuit",
         "Noodle", "Spoon", "Harbor", "Pixel", "Quokka", "Sparrow", "Tulip", "Yeti", "Zebra", "Fig",
         "Llama")  # fmt: skip
NAMES = ("jess", "mike", "sarah", "tom", "anna", "kevin", "lily", "omar", "priya", "jake", "nina",
         "alex", "chris", "maria", "dan", "emma", "liam", "zoe", "sam", "kate")  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One patient story: a topic and the facts every text of the thread is filled from."""

    topic: Topic
    slots: dict[str, str]

    def fill(self, template: str) -> str:
        return template.format_map(self.slots)

    @cached_property
    def post_sentences(self) -> list[str]:
        """Every post sentence filled once: noise posts reuse a pool of cases and only reorder these."""
        return [self.fill(sentence) for sentence in POST_SENTENCES]


def draw_case(rng: random.Random) -> Case:
    """Pick a topic, a patient and the specifics of the complaint."""
    topic = rng.choice(TOPICS)
    female = rng.random() < 0.6
    symptom, symptom2 = rng.sample(topic.symptoms, 2)
    feet, inches = (
        (5, rng.randint(0, 9)) if female else rng.choice(((5, rng.randint(5, 11)), (6, rng.randint(0, 3))))
    )
    pounds = rng.randint(105, 210) if female else rng.randint(140, 260)
    slots = {
        "condition": topic.condition,
        "specialty": topic.specialty,
        "part": rng.choice(topic.parts),
        "symptom": symptom,
        "Symptom": symptom[0].upper() + symptom[1:],
        "symptom2": symptom2,
        "test": rng.choice(topic.tests),
        "drug": (drug := rng.choice(topic.drugs)),
        "Drug": drug[0].upper() + drug[1:],
        "duration": rng.choice(DURATIONS),
        "trigger": rng.choice(TRIGGERS),
        "relative": rng.choice(RELATIVES),
        "serious": rng.choice(SERIOUS),
        "job": rng.choice(JOBS),
        "red_flag": rng.choice(RED_FLAGS),
        "finding": rng.choice(FINDINGS),
        "history": rng.choice(HISTORY),
        "meds": rng.choice(MEDS),
        "race": rng.choice(RACES),
        "emoji": rng.choice(EMOJI),
        "age": str(rng.randint(16, 72)),
        "sx": "F" if female else "M",
        "sex": "female" if female else "male",
        "Sex": "Female" if female else "Male",
        "feet": str(feet),
        "inches": str(inches),
        "pounds": str(pounds),
        "cm": str(round((feet * 12 + inches) * 2.54)),
        "kg": str(round(pounds * 0.4536)),
        "kilos": str(rng.randint(3, 12)),
        "pain": str(rng.randint(3, 9)),
        "minutes": str(rng.choice((5, 10, 20, 30, 45))),
    }  # fmt: skip
    return Case(topic, slots)


def title(rng: random.Random, case: Case) -> str:
    return case.fill(rng.choice(TITLE_TEMPLATES))


def post_body(rng: random.Random, case: Case, sentences: int) -> str:
    """Demographic line, then `sentences` sentences of history in paragraphs of two to four."""
    picked = rng.sample(case.post_sentences, min(sentences, len(POST_SENTENCES)))
    size = 2 + int(rng.random() * 3)
    paragraphs = [" ".join(picked[start : start + size]) for start in range(0, len(picked), size)]
    opener = [rng.choice(FLAT_OPENERS)] if rng.random() < 0.15 else []
    return "\n\n".join([*opener, case.fill(rng.choice(DEMOGRAPHIC_TEMPLATES)), *paragraphs])


def follow_up(rng: random.Random, case: Case) -> str:
    """An OP question after an answer, often with a sentence of context before it."""
    question = case.fill(rng.choice(FOLLOW_UP_TEMPLATES))
    return f"{case.fill(rng.choice(FOLLOW_UP_CONTEXT))} {question}" if rng.random() < 0.7 else question


def answer_sentences(rng: random.Random, case: Case, advice: int) -> list[str]:
    """A physician's first answer: an opener naming the case's condition, then `advice` sentences."""
    opener = case.fill(rng.choice(ANSWER_OPENERS))
    return [opener, *(case.fill(sentence) for sentence in rng.sample(ANSWER_SENTENCES, advice))]


def answer(rng: random.Random, case: Case, advice: int) -> str:
    return " ".join(answer_sentences(rng, case, advice))


def follow_up_answer(rng: random.Random, case: Case, advice: int) -> str:
    """A physician's reply to a follow-up: advice only, no restated diagnosis."""
    return " ".join(case.fill(sentence) for sentence in rng.sample(ANSWER_SENTENCES, advice))


def lay_comment(rng: random.Random, case: Case) -> str:
    return case.fill(rng.choice(LAY_TEMPLATES))


def op_reply(rng: random.Random, case: Case) -> str:
    return case.fill(rng.choice(OP_REPLY_TEMPLATES))


def garbled(rng: random.Random, words: int = 12) -> str:
    """Mojibake-like noise: a few ASCII letters among box-drawing symbols, under 30% clean characters."""
    noise = "▒▓░█■□▚▞"
    pieces = []
    for _ in range(words):
        piece = "".join(rng.choice(noise) for _ in range(rng.randint(2, 5)))
        pieces.append(piece + rng.choice("abcdefgh") if rng.random() < 0.3 else piece)
    return " ".join(pieces)


def with_markers(rng: random.Random, case: Case, markers: int) -> str:
    """An answer with `markers` '[removed]'/'[deleted]' fragments spliced between its sentences."""
    sentences = [case.fill(s) for s in rng.sample(ANSWER_SENTENCES, markers + 1)]
    for position in range(markers, 0, -1):
        sentences.insert(position, rng.choice(("[removed]", "[deleted]")))
    return " ".join(sentences)


def spice(rng: random.Random, body: str, *, links: bool) -> str:
    """Add at most one thing real text carries: an entity, a zero-width paragraph, an emoji, or (only
    with `links`) a URL, a markdown link, an e-mail address or a phone number."""
    draw = rng.random()
    if draw < 0.12:
        return body.replace(" and ", " &amp; ", 1)
    if draw < 0.16:
        return body.replace("\n\n", "\n\n&#x200B;\n\n", 1)
    if draw < 0.2:
        return f"{body} {rng.choice(EMOJI)}"
    if draw < 0.27 and links:
        token = "".join(rng.choices("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789", k=7))
        return f"{body} {rng.choice(LINK_SNIPPETS).format(token)}"
    return body


def usernames(rng: random.Random, count: int) -> list[str]:
    """`count` distinct usernames in the styles Reddit users pick (and Reddit's own Adjective-Noun-1234)."""
    styles = (
        lambda: f"{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}-{rng.randint(1000, 9999)}",
        lambda: f"{rng.choice(NAMES)}_{rng.choice(NOUNS).lower()}{rng.randint(1, 99)}",
        lambda: f"throwaway{rng.randint(10000, 9999999)}",
        lambda: f"{rng.choice(ADJECTIVES)}{rng.choice(NOUNS)}{rng.randint(1, 999)}",
        lambda: f"{rng.choice(NAMES).capitalize()}_{rng.choice('ABCDEFGHJKLMNPRSTW')}{rng.randint(70, 99)}",
        lambda: f"ThrowRA_{rng.choice(NOUNS).lower()}{rng.randint(1, 9999)}",
    )
    names: dict[str, None] = {}
    while len(names) < count:
        names[rng.choice(styles)()] = None
    return list(names)
