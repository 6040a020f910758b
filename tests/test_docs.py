"""The documentation keeps its promises: every `threadmed` command it shows exists, every link resolves, and
git ignores the folders its commands write.

The commands are read from every Markdown file of the repository (tracked, or new and not ignored), from
fenced code blocks and inline code alike, so a command added to any README is checked without a list here.
"""

import itertools
import re
import shlex
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from flows.cli import app

ROOT = Path(__file__).resolve().parents[1]
CLI = typer.main.get_command(app)

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# A link or image target: [text](target) or [text](target "title"); URLs and mail are not files.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SHELL_SEPARATORS = {"&&", "||", "|", ";", "&"}
# Words that run the next one: `time threadmed ...`, `uv run threadmed ...`.
COMMAND_WRAPPERS = {"env", "time", "uv", "run", "exec"}


def markdown_files() -> list[Path]:
    """Every Markdown file git tracks, and new ones it does not ignore (a README not yet committed)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    return sorted({ROOT / name for name in listed if name and (ROOT / name).is_file()})


def code_and_prose(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(fenced code lines, prose lines), each with its 1-based line number; a `\\` continuation is joined."""
    fenced: list[tuple[int, str]] = []
    prose: list[tuple[int, str]] = []
    in_fence = False
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            prose.append((number, line))
        else:
            if pending is not None:
                number, line = pending[0], pending[1] + " " + line.strip()
            pending = (number, line.rstrip()[:-1]) if line.rstrip().endswith("\\") else None
            if pending is None:
                fenced.append((number, line))
    return fenced, prose


def shell_commands(line: str) -> list[list[str]]:
    """A shell line's simple commands (split at `&&`, `|`, `;`, `&`), comments dropped, quotes respected."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote in an illustrative line: split on spaces
        tokens = line.split("#")[0].split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in SHELL_SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


def threadmed_words(words: list[str]) -> tuple[str, ...] | None:
    """The words after `threadmed` when this command runs it (after any VAR=value or wrapper), else None."""
    while words and (ENV_ASSIGNMENT.match(words[0]) or words[0] in COMMAND_WRAPPERS):
        words = words[1:]
    if not words or not (words[0] == "threadmed" or words[0].endswith("/threadmed")):
        return None
    return tuple(words[1:])


def commands_in(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """(line, words after `threadmed`) of each `threadmed` command of a Markdown text, fenced or inline."""
    fenced, prose = code_and_prose(text)
    found = [
        (number, words)
        for number, line in fenced
        for command in shell_commands(line)
        if (words := threadmed_words(command)) is not None
    ]
    for number, line in prose:
        for _, code in INLINE_CODE.findall(line):
            # Inline code is one command, never a pipeline: a table cell writes a literal pipe as `\|`.
            try:
                words = threadmed_words(shlex.split(code.replace("\\|", "|")))
            except ValueError:
                continue
            if words is not None:
                found.append((number, words))
    return sorted(found)


def command_path(words: tuple[str, ...]) -> tuple[tuple[str, ...], Any]:
    """The longest run of leading words naming nested subcommands, and the command it reaches.

    Typer's commands are its own copy of click's classes, so groups are told by their `commands`.
    """
    command = CLI
    path: list[str] = []
    for word in words:
        if word not in getattr(command, "commands", {}):
            break
        command = command.commands[word]
        path.append(word)
    return tuple(path), command


def wrong_words(words: tuple[str, ...]) -> list[str]:
    """What a documented command names that the CLI lacks: a command of a group, or an option."""
    path, command = command_path(words)
    shown = " ".join(("threadmed", *path))
    rest = words[len(path) :]
    if hasattr(command, "commands") and rest and not rest[0].startswith("-"):
        return [f"no command {rest[0]!r} in `{shown}`"]
    known = {"--help", *(name for param in command.params for name in param.opts)}
    named = [word.strip("[]()").split("=")[0] for word in rest if re.match(r"^[\[(]*--?[A-Za-z]", word)]
    return [f"no option {option} in `{shown}`" for option in named if option not in known]


DOC_COMMANDS = [
    (f"{path.relative_to(ROOT).as_posix()}:{number}", words)
    for path in markdown_files()
    for number, words in commands_in(path.read_text(encoding="utf-8"))
]
SHOWN_AT: dict[tuple[str, ...], list[str]] = defaultdict(list)
for shown_at, doc_words in DOC_COMMANDS:
    SHOWN_AT[command_path(doc_words)[0]].append(shown_at)


def test_commands_are_read_from_code_blocks_and_inline_code():
    text = (
        "Run `threadmed report RUN_DIR [--out DIR]`; `threadmed/retrieval` is a model.\n"
        "```bash\n"
        "make demo\n"
        "threadmed evaluate --dataset build \\\n"
        "  --out runs/x   # a comment --not-an-option\n"
        "synthea -p 2 && threadmed snomed cases 'synthea/fhir files' --out cases\n"
        "PROJECT_ROOT=$PWD .venv/bin/threadmed consult kb | head; time uv run threadmed demo &\n"
        "```\n"
        "| `threadmed synth --layout subreddit\\|monthly` | writes dumps |\n"
    )
    assert commands_in(text) == [
        (1, ("report", "RUN_DIR", "[--out", "DIR]")),
        (4, ("evaluate", "--dataset", "build", "--out", "runs/x")),
        (6, ("snomed", "cases", "synthea/fhir files", "--out", "cases")),
        (7, ("consult", "kb")),
        (7, ("demo",)),
        (9, ("synth", "--layout", "subreddit|monthly")),
    ]


def test_a_command_or_option_the_cli_lacks_is_named():
    assert wrong_words(("snomed", "evaluate", "--cases", "c", "[--models", "a,b]", "--epochs=2", "...")) == []
    assert wrong_words(("snomed", "evaluate", "--cases", "c", "--no-such", "1")) == [
        "no option --no-such in `threadmed snomed evaluate`"
    ]
    assert wrong_words(("snomed", "cases|evaluate")) == ["no command 'cases|evaluate' in `threadmed snomed`"]


def test_the_docs_show_commands_of_every_group():
    """The extraction finds the READMEs' commands of each group (so the tests below are not vacuous)."""
    for expected in [
        ("build",),
        ("evaluate",),
        ("snomed", "evaluate"),
        ("consult", "evaluate"),
        ("judge", "rerun"),
    ]:
        assert expected in SHOWN_AT


@pytest.mark.parametrize("path", sorted(SHOWN_AT), ids=lambda path: " ".join(("threadmed", *path)))
def test_every_documented_command_has_help(path):
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, (
        f"`threadmed {' '.join(path)} --help`, shown at {SHOWN_AT[path]}:\n{result.output}"
    )


def test_every_documented_command_names_only_what_the_cli_has():
    wrong = [f"{shown_at}: {problem}" for shown_at, words in DOC_COMMANDS for problem in wrong_words(words)]
    assert wrong == []


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors: set[str] = set()
    _, prose = code_and_prose(text)
    for _, line in prose:
        if heading := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug = re.sub(r"[^\w\- ]", "", heading[1].lower()).replace(" ", "-")
            anchor, repeat = slug, 1
            while anchor in anchors:  # GitHub numbers a repeated heading's anchor
                anchor, repeat = f"{slug}-{repeat}", repeat + 1
            anchors.add(anchor)
    return anchors


def relative_links(path: Path) -> list[tuple[int, str, Path]]:
    """(line, target, the file it names) for each link of a Markdown file that is not a URL."""
    return [
        (
            number,
            target,
            (path.parent / target.partition("#")[0]).resolve() if not target.startswith("#") else path,
        )
        for number, line in code_and_prose(path.read_text(encoding="utf-8"))[1]
        for target in LINK.findall(INLINE_CODE.sub("", line))
        if not EXTERNAL.match(target)
    ]


def broken_links(path: Path) -> list[tuple[int, str, str]]:
    """(line, target, what is wrong) for each link of a Markdown file to a missing file or heading."""
    broken = []
    for number, target, linked in relative_links(path):
        anchor = target.partition("#")[2]
        if not linked.exists():
            broken.append((number, target, "no such file"))
        elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked.read_text()):
            broken.append((number, target, "no such heading"))
    return broken


def test_broken_links_name_missing_files_and_headings(tmp_path):
    (tmp_path / "b.md").write_text("# A heading, with `code`\n")
    (tmp_path / "a.md").write_text(
        "# Top\n"
        "## Top\n"
        "[b](b.md#a-heading-with-code) [here](#top-1) [web](https://example.org/x.md) [gone](c.md) "
        "[anchor](b.md#nope) ![figure](b.md)\n"
        "```\n[in code](nowhere.md)\n```\n"
        "`[inline](nowhere.md)`\n"
    )
    assert broken_links(tmp_path / "a.md") == [
        (3, "c.md", "no such file"),
        (3, "b.md#nope", "no such heading"),
    ]


def test_every_relative_link_resolves():
    broken = [
        (path.relative_to(ROOT).as_posix(), *problem)
        for path in markdown_files()
        for problem in broken_links(path)
    ]
    assert broken == []


def test_every_readme_is_reached_from_the_top_readme():
    """The top README is the table of contents: following links from it reaches every README."""
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page not in reached and page.suffix == ".md" and page.is_file():
            reached.add(page)
            todo += [linked for _, _, linked in relative_links(page)]
    readmes = [path for path in markdown_files() if path.name == "README.md"]
    unreached = [path.relative_to(ROOT).as_posix() for path in readmes if path not in reached]
    assert unreached == [], "link each from the Documentation table of README.md (or from a README it links)"


# The options of a documented command that name a folder it writes.
WRITTEN_FOLDER_OPTIONS = ("--out", "--lake", "--workdir")


def written_folders(words: tuple[str, ...]) -> list[str]:
    """The folders at the checkout's root that a documented command's options write into (placeholders such
    as RUN_DIR, and paths outside the checkout, are none)."""
    folders = []
    for option, value in itertools.pairwise(words):
        first = value.split("/")[0]
        if option in WRITTEN_FOLDER_OPTIONS and re.fullmatch(r"[a-z][\w.-]*", first):
            folders.append(first)
    return folders


def test_written_folders_are_read_from_a_command_s_options():
    words = ("snomed", "evaluate", "--cases", "cases/a", "--out", "runs/x", "--lake", "../l", "--out", "RUN")
    assert written_folders(words) == ["runs"]


def test_every_folder_a_documented_command_writes_is_ignored_by_git():
    """A run's manifest records whether the checkout had changes (tasks/core/provenance.py): a folder of
    outputs made by following a README must not make a clean checkout look changed."""
    folders = sorted({folder for _, words in DOC_COMMANDS for folder in written_folders(words)})
    assert {"runs", "cases", "oracle", "oracle-model", "dumps"} <= set(folders)  # the extraction finds them
    ignored = subprocess.run(
        ["git", "check-ignore", "--stdin"], input="".join(f"{folder}/output\n" for folder in folders),
        cwd=ROOT, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert [folder for folder in folders if f"{folder}/output" not in ignored] == []
