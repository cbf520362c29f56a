"""Checks for text written into a skill: the threat scanner first, then what only skills do.

A skill is a procedure the agent will follow later, often with a terminal at hand, so beyond prompt
injection it must not tell the agent to run code fetched from the network, run a decoded blob, read
credentials, or write outside the skill (system files, the home folder, shell start-up files).
`check_skill_text` returns the first Finding, or None when the text is clean.
"""

from __future__ import annotations

import re

from shared.security.scanner import MAX_SCAN_CHARS, Finding, normalise, scan

DOWNLOAD_EXEC = "download_exec"
DECODE_EXEC = "decode_exec"
CREDENTIAL_READ = "credential_read"
WRITE_OUTSIDE = "write_outside_skill"

# The scanner reads at most MAX_SCAN_CHARS; longer skill files are scanned in overlapping windows.
WINDOW_OVERLAP = 2_048
_FETCH = r"(?:curl|wget|fetch|aria2c|http(?:ie)?|invoke-webrequest|iwr|invoke-restmethod|irm)"
_RUNNER = (r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:(?:ba|z|k|c|tc|da|fi|a)?sh|python[0-9.]*|perl|ruby|node|php"
           r"|iex|invoke-expression|source|pwsh|powershell)\b")
_DECODE = r"(?:base64\s+(?:-\w*d\w*|--decode)|xxd\s+-r|openssl\s+(?:enc\s+)?-?(?:base64|a)\b[^\n|]*-d\b|uudecode)"
_OUTSIDE = (r"(?:/etc/|/usr/|/bin/|/sbin/|/lib\w*/|/boot/|/root/|/opt/|/var/(?!tmp\b)|/sys/|/proc/|/dev/(?!null\b)"
            r"|~/|\$home\b|\$\{home\}|%userprofile%|%appdata%|(?:\.\./)+)")
_DOTFILES = r"\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|cshrc|tcshrc|inputrc|xinitrc)\b"
_SECRET_PATHS = (r"(?:\.ssh/|\.aws/credentials|\.aws/config|\.config/gcloud|application_default_credentials"
                 r"|\.docker/config\.json|\.kube/config|\.netrc|\.pgpass|\.git-credentials|\.npmrc|\.pypirc"
                 r"|/etc/shadow|/etc/gshadow|/etc/sudoers|keychain|\.gnupg/|\.password-store/)")

_SOURCES: tuple[tuple[str, str, str, str], ...] = (
    ("download_pipe_shell", DOWNLOAD_EXEC, rf"\b{_FETCH}\b[^\n|;]*\|\s*{_RUNNER}",
     "pipes a download straight into a shell or interpreter"),
    ("download_subshell", DOWNLOAD_EXEC,
     rf"(?:\b(?:(?:ba|z|k|da)?sh|source|eval|python[0-9.]*)\s+(?:-c\s+)?[\"']?(?:<\(|\$\()\s*{_FETCH}\b"
     rf"|(?:^|[\s;&|])\.\s+<\(\s*{_FETCH}\b|\biex\s*\(?\s*(?:\(\s*)?(?:{_FETCH}|new-object\s+net\.webclient)\b"
     rf"|\bdownloadstring\s*\()",
     "runs code fetched from the network"),
    ("decode_pipe_shell", DECODE_EXEC, rf"\b{_DECODE}[^\n]*\|\s*{_RUNNER}",
     "decodes a blob and pipes it into a shell or interpreter"),
    ("eval_decoded", DECODE_EXEC,
     rf"\b(?:eval|exec)\b\s*[\"'(]?\s*\$\(\s*[^)\n]*\b{_DECODE}"
     r"|\b(?:exec|eval|compile)\s*\(\s*(?:base64\.\w*decode|codecs\.decode|zlib\.decompress|bz2\.decompress"
     r"|lzma\.decompress|bytes\.fromhex|marshal\.loads|binascii\.\w+|__import__\s*\(\s*[\"'](?:base64|zlib"
     r"|codecs|marshal|binascii))"
     r"|\b(?:eval|function)\s*\(\s*(?:atob|unescape|buffer\.from|string\.fromcharcode)\s*\("
     r"|\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]*\s-e(?:nc(?:odedcommand)?)?\s+[a-z0-9+/=]{16,}",
     "executes a decoded or obfuscated blob"),
    ("credential_file_read", CREDENTIAL_READ,
     rf"\b(?:cat|less|more|head|tail|bat|strings|xxd|od|base64|cp|scp|rsync|tar|zip|grep|type|get-content"
     rf"|open)\b[^\n]{{0,80}}?{_SECRET_PATHS}",
     "reads a credential store (ssh keys, cloud credentials, .netrc, password files)"),
    ("credential_dump", CREDENTIAL_READ,
     r"\bsecurity\s+(?:find-(?:generic|internet)-password|dump-keychain)\b"
     r"|\b(?:printenv|env|set|export\s+-p)\s*\|\s*(?:curl|wget|nc|ncat|socat|tee|base64)\b"
     r"|\b(?:echo|printf|print)\b[^\n]{0,40}\$\{?\w*(?:secret|passw(?:or)?d|token|api_key|apikey|credential)",
     "dumps secrets from the keychain or the environment"),
    ("write_outside_redirect", WRITE_OUTSIDE, rf"(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?{_OUTSIDE}",
     "redirects output into a file outside the skill and workspace"),
    ("write_outside_copy", WRITE_OUTSIDE,
     rf"\b(?:cp|mv|install|ln|rsync|dd|chmod|chown|rm)\b[^\n;|&]*\s(?:of=)?[\"']?{_OUTSIDE}",
     "copies, moves or changes files outside the skill and workspace"),
    ("write_outside_open", WRITE_OUTSIDE,
     r"\bopen\s*\(\s*[\"'](?:/(?!tmp/)|~|\.\./)[^\"'\n]*[\"']\s*,\s*[\"'][wax]"
     r"|\bpath\s*\(\s*[\"'](?:/(?!tmp/)|~|\.\./)[^\"'\n]*[\"']\s*\)\s*\.\s*(?:write|unlink|rmdir|chmod)",
     "writes a file by absolute, home or parent path"),
    ("shell_startup_edit", WRITE_OUTSIDE, rf"(?:>>?|\btee\b|\bsed\s+-i\b)[^\n]{{0,80}}{_DOTFILES}",
     "edits a shell start-up file"),
    ("persistence", WRITE_OUTSIDE,
     r"\bcrontab\s+(?:-u\s+\S+\s+)?(?:-e\b|-(?:\s|$)|<|[a-z0-9_./~$][^\s|;]*)"
     r"|\bsystemctl\s+(?:--user\s+)?enable\b|\blaunchctl\s+(?:load|bootstrap)\b",
     "installs something that runs again later (cron, services)"),
)

PATTERNS: tuple[tuple[str, str, re.Pattern[str], str], ...] = tuple(
    (pid, category, re.compile(source, re.MULTILINE), reason) for pid, category, source, reason in _SOURCES
)


def skill_finding(text: str) -> Finding | None:
    """The first skill-specific threat in `text` (no length cap: these patterns are line-bounded)."""
    folded = normalise(text)
    for pattern_id, category, regex, reason in PATTERNS:
        if regex.search(folded):
            return Finding(pattern_id, category, f"Blocked: skill content {reason} ('{pattern_id}').")
    return None


def _windows(text: str) -> list[str]:
    """Overlapping slices the scanner can read whole, so nothing past its cap goes unscanned."""
    if len(text) <= MAX_SCAN_CHARS:
        return [text]
    step = MAX_SCAN_CHARS - WINDOW_OVERLAP
    return [text[start:start + MAX_SCAN_CHARS] for start in range(0, len(text) - WINDOW_OVERLAP, step)]


def check_skill_text(text: str) -> Finding | None:
    """The threat scanner over the whole text, then the skill checks; the first finding wins."""
    for window in _windows(text):
        finding = scan(window)
        if finding is not None:
            return finding
    return skill_finding(text)
