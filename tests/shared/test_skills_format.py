"""The skill format: names, front matter, sizes and supporting-file paths, each with its own error code."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.errors import HermesError
from shared.security.skill_checks import check_skill_text
from shared.files.skill_format import (
    check_name,
    check_support_path,
    check_support_size,
    index_description,
    parse_skill_md,
)

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

BUNDLED = Path(__file__).resolve().parents[2] / "shared" / "bundled_skills"


def skill_md(name: str = "brew-tea", description: str = "Brew a good cup of tea.", body: str = "1. Boil water.\n",
             extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def code_of(call) -> str:
    with pytest.raises(HermesError) as caught:
        call()
    return caught.value.code


def test_a_full_front_matter_parses_with_a_real_yaml_parser():
    content = skill_md(extra="version: 1.2\nlicense: MIT\nmetadata:\n  tags: [tea, kitchen]\n  requires_tools: [x]\n",
                       description="'Brew tea: quoted, with a colon'")
    front = parse_skill_md("\ufeff" + content, "brew-tea")

    assert front.name == "brew-tea"
    assert front.description == "Brew tea: quoted, with a colon"
    assert (front.version, front.license) == ("1.2", "MIT")
    assert front.metadata == {"tags": ["tea", "kitchen"], "requires_tools": ["x"]}
    assert front.body == "1. Boil water.\n"


@pytest.mark.parametrize("name, code", [
    ("a" * 64, None),
    ("a" * 65, "skill_name_too_long"),
    ("Foo", "skill_name_invalid"),
    ("-x", "skill_name_invalid"),
    (".hidden", "skill_name_invalid"),
    ("..", "skill_name_invalid"),
    ("a/b", "skill_name_invalid"),
    ("with space", "skill_name_invalid"),
    ("", "skill_name_invalid"),
    ("v1.2_ok-name", None),
])
def test_names(name, code):
    if code is None:
        assert check_name(name) == name
    else:
        assert code_of(lambda: check_name(name)) == code


@pytest.mark.parametrize("content, code", [
    ("no front matter\n", "skill_frontmatter_missing"),
    ("---\nname: brew-tea\ndescription: x\nbody without a closing line\n", "skill_frontmatter_missing"),
    ("---\nname: [unclosed\n---\nbody\n", "skill_frontmatter_invalid"),
    ("---\n- a list\n- not a mapping\n---\nbody\n", "skill_frontmatter_invalid"),
    ("---\ndescription: no name\n---\nbody\n", "skill_name_invalid"),
    (skill_md(name="other-name"), "skill_name_mismatch"),
    (skill_md(description='""'), "skill_description_missing"),
    ("---\nname: brew-tea\n---\nbody\n", "skill_description_missing"),
    (skill_md(description="d" * 1025), "skill_description_too_long"),
    (skill_md(body="\n  \n"), "skill_body_empty"),
    (skill_md(extra="metadata: [not, a, mapping]\n"), "skill_frontmatter_invalid"),
    (skill_md(extra="version: {a: 1}\n"), "skill_frontmatter_invalid"),
])
def test_each_broken_skill_md_has_its_own_code(content, code):
    assert code_of(lambda: parse_skill_md(content, "brew-tea")) == code


def test_the_description_and_skill_md_limits_are_inclusive():
    assert parse_skill_md(skill_md(description="d" * 1024), "brew-tea").description == "d" * 1024
    head = skill_md(body="")
    at_limit = head + "x" * (100_000 - len(head))
    assert len(parse_skill_md(at_limit, "brew-tea").body) == 100_000 - len(head)
    assert code_of(lambda: parse_skill_md(at_limit + "x", "brew-tea")) == "skill_content_too_large"


def test_supporting_files_may_be_one_mib():
    check_support_size("assets/big.txt", "x" * (1024 * 1024))
    assert code_of(lambda: check_support_size("assets/big.txt", "x" * (1024 * 1024 + 1))) == "skill_file_too_large"
    assert code_of(lambda: check_support_size("assets/big.txt", "é" * (512 * 1024 + 1))) == "skill_file_too_large"


@pytest.mark.parametrize("path", ["references/api.md", "templates/a/b/c.txt", "scripts/run.sh", "assets/x.json"])
def test_supporting_paths_inside_the_four_folders_pass(path):
    assert check_support_path(path) == path


@pytest.mark.parametrize("path", [
    "../x", "references/../../x", "references/../SKILL.md", "/etc/passwd", "~/x", "notes/x.md", "SKILL.md",
    "references", "references/", "references//x", "./references/x", "references/./x", "references\\..\\x",
    "references/x\x00y", "", "   ",
])
def test_supporting_paths_that_escape_or_wander_are_refused(path):
    assert code_of(lambda: check_support_path(path)) == "skill_path_invalid"


def test_the_index_cuts_descriptions_to_sixty_characters():
    assert index_description("x" * 60) == "x" * 60
    assert index_description("y" * 61) == "y" * 57 + "..."
    assert index_description("two\n  lines") == "two lines"


@pytest.mark.parametrize("folder", sorted(p.name for p in BUNDLED.iterdir() if p.is_dir()))
def test_every_bundled_skill_parses_and_passes_the_scanners(folder):
    skill_dir = BUNDLED / folder
    front = parse_skill_md((skill_dir / "SKILL.md").read_text(), folder)

    assert front.description and len(front.description) <= 1024
    for path in skill_dir.rglob("*"):
        if path.is_file():
            relative = path.relative_to(skill_dir).as_posix()
            if relative != "SKILL.md":
                check_support_path(relative)
            assert check_skill_text(path.read_text()) is None, relative


def test_at_least_four_bundled_skills_ship():
    names = {p.name for p in BUNDLED.iterdir() if (p / "SKILL.md").is_file()}
    assert {"writing-good-skills", "tidy-memory", "investigate-failing-tests", "summarise-a-long-session"} <= names
