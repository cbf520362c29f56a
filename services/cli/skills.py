"""`hstack skills list|show|install|archive|restore|pin|unpin`: the user's skills, through the api."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from services.cli.client import ApiClient, CliError

SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
DESCRIPTION_WIDTH = 60
STATE_VERBS = {"archive": "Archived", "restore": "Restored", "pin": "Pinned", "unpin": "Unpinned"}


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `skills` subcommand and its actions."""
    actions = commands.add_parser("skills", help="list, read, install and archive your skills").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    key = argparse.ArgumentParser(add_help=False)
    key.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    parents = [*client_options, key]
    actions.add_parser("list", parents=parents, help="bundled skills and your own, with origin, state and use")
    actions.add_parser("show", parents=parents, help="print one skill's SKILL.md and files").add_argument("name")
    install = actions.add_parser("install", parents=parents, help="install a skill folder (SKILL.md + subfolders)")
    install.add_argument("path", help="the skill's folder; its name is the skill's name")
    for action, text in (("archive", "move a skill to the archive (restorable)"),
                         ("restore", "bring an archived skill back"),
                         ("pin", "keep a skill from being archived or deleted"), ("unpin", "undo pin")):
        actions.add_parser(action, parents=parents, help=text).add_argument("name")


def run(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "list":
        return list_skills(client, out)
    if args.action == "show":
        return show(client, args.name, out)
    if args.action == "install":
        return install(client, Path(args.path), out)
    skill = client.post(f"/v1/skills/{args.name}/{args.action}")
    out.write(f"{STATE_VERBS[args.action]} {skill['name']}: now {skill['state']}"
              f"{', pinned' if skill['pinned'] else ''}.\n")
    return 0


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DESCRIPTION_WIDTH else flat[: DESCRIPTION_WIDTH - 3] + "..."


def list_skills(client: ApiClient, out: TextIO) -> int:
    skills = client.get("/v1/skills")["data"]
    if not skills:
        out.write("No skills yet.\n")
        return 0
    width = max(len(s["name"]) for s in skills)
    for s in skills:
        flags = f"{s['origin']}/{s['state']}" + (" pinned" if s["pinned"] else "")
        out.write(f"{s['name'].ljust(width)}  {flags:<24} uses {s['use_count']:<4} {_cut(s['description'])}\n")
    return 0


def show(client: ApiClient, name: str, out: TextIO) -> int:
    skill = client.get(f"/v1/skills/{name}")
    out.write(f"{skill['name']} ({skill['origin']}, {skill['state']}"
              f"{', pinned' if skill['pinned'] else ''}; viewed {skill['view_count']}, used {skill['use_count']})\n")
    out.write(skill["content"].rstrip("\n") + "\n")
    out.write("Files: " + (", ".join(skill["files"]) or "none") + "\n")
    return 0


def read_folder(path: Path) -> dict:
    """The install body for a local skill folder; anything the api would refuse is reported here first."""
    if not (path / "SKILL.md").is_file():
        raise CliError(f"{path} has no SKILL.md; a skill is a folder holding SKILL.md.")
    files: dict[str, str] = {}
    for entry in sorted(path.rglob("*")):
        relative = entry.relative_to(path).as_posix()
        if entry.is_symlink():
            raise CliError(f"{relative} is a symbolic link; skills may not contain links.")
        if entry.is_dir() or relative == "SKILL.md" or any(p.startswith(".") for p in relative.split("/")):
            continue
        if relative.split("/")[0] not in SUPPORT_DIRS:
            raise CliError(f"{relative} is outside {', '.join(d + '/' for d in SUPPORT_DIRS)}; move or remove it.")
        files[relative] = _text(entry, relative)
    return {"name": path.resolve().name, "content": _text(path / "SKILL.md", "SKILL.md"), "files": files}


def _text(path: Path, shown: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{shown} is not UTF-8 text; only text files can be installed.") from exc


def install(client: ApiClient, path: Path, out: TextIO) -> int:
    skill = client.post("/v1/skills", read_folder(path))
    count = len(skill["files"])
    out.write(f"Installed {skill['name']} with {count} supporting file{'s' if count != 1 else ''}; "
              "it is in the index of your next session.\n")
    return 0
