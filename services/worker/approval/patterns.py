"""Hermes Agent's dangerous patterns, written against the canonical spelling of each simple command
(commands.Cmd.text: real program name, prefixes gone, `-rf` spelled `-f -r`). A match asks a human
in `manual` mode and the guardian in `smart` mode. The description doubles as the pattern key that
a session-scoped approval remembers."""

from __future__ import annotations

import re

from .parse import Analysis

SYS = r"/(etc|usr|bin|sbin|boot|lib|lib64|var|sys|proc|dev|root|opt)(/|\s|$)"
# Where output is thrown away or shown: writing there changes nothing.
HARMLESS_DEVICE = r"(?!/dev/(null|zero|stdout|stderr|tty|fd/\d+)(\s|$))"
# The workspace is HOME inside the sandbox: /workspace/.bashrc and a bare .bashrc there are ~/.bashrc.
HOME = r"(~/|\$HOME/|/workspace/|(?<=[\s>])(\./)?)"
USER_FILES = (HOME + r"(\.ssh\b|\.bashrc|\.bash_profile|\.bash_login|\.bash_logout|\.zshrc|\.zshenv|\.zprofile|\.zlogin"
              r"|\.profile|\.inputrc|\.netrc|\.pgpass|\.npmrc|\.pypirc|\.gitconfig|\.config/)")
# A symbolic mode giving others (o or a) write access: a=rwx, o+w, ugo+rwx, u+x,o+w.
WORLD_WRITABLE = r"(\S*,)?[ugo]*[ao][ugoa]*[+=][rwxXst]*w"
SHELL = r"(sudo\s+)?(bash|sh|zsh|dash|ksh|fish|mksh|ash)\b"

# (description, scope, pattern). Scopes: cmd = one simple command, pipe = a pipeline, raw = the text.
RULES: list[tuple[str, str, str]] = [
    ("delete in a root-level path", "cmd", r"^rm\b.*\s/\S*"),
    ("recursive delete", "cmd", r"^rm\b.*\s-r\b"),
    ("forced delete of a wildcard", "cmd", r"^rm\b.*\s-f\b.*\*"),
    ("shred files", "cmd", r"^shred\b"),
    ("Windows recursive delete", "cmd", r"^(del|erase|rd|rmdir)\b.*\s/[sq]\b"),
    ("PowerShell Remove-Item", "cmd", r"(?i)^remove-item\b"),
    ("encoded PowerShell", "cmd", r"(?i)^(powershell|pwsh)(\.exe)?\b.*\s-(e|enc|encodedcommand)\b"),
    ("chmod world-writable", "cmd", r"^chmod\b.*\s(0*[0-7]?[0-7][0-7][2367]\b|" + WORLD_WRITABLE + ")"),
    ("recursive chmod", "cmd", r"^chmod\b.*\s-R\b"),
    ("setuid or setgid bit", "cmd", r"^chmod\b.*\s((\S*,)?[ugoa]*[+=][rwxX]*s|0*[2467][0-7]{3})\b"),
    ("recursive chown", "cmd", r"^(chown|chgrp)\b.*\s-R\b"),
    ("chown to root", "cmd", r"^chown\b.*\sroot\b"),
    ("make a filesystem", "cmd", r"^(mkfs\S*|mke2fs|mkswap)\b"),
    ("dd", "cmd", r"^dd\b"),
    ("write to a block device", "cmd", r"(>|\bof=|^tee\b.*)\s*/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-)"),
    ("SQL DROP", "cmd", r"(?i)\bdrop\s+(table|database|schema|index|view|user)\b"),
    ("SQL DELETE without WHERE", "cmd", r"(?i)\bdelete\s+from\s+\S+\s*(;|$|\"|')(?!.*\bwhere\b)"),
    ("SQL TRUNCATE", "cmd", r"(?i)\btruncate\s+(table\s+)?\w+\s*(;|$)"),
    ("drop a database", "cmd", r"^(dropdb|dropuser)\b|^redis-cli\b.*\b(flushall|flushdb)\b"),
    ("overwrite a system file", "cmd", r"(^|\s)(&>>?|>|>>|>\|)\s*" + HARMLESS_DEVICE + SYS),
    ("tee into a system file", "cmd", r"^tee\b.*\s" + SYS),
    ("write the project's .env or config", "cmd", r"((>|>>)\s*|^tee\b.*\s)\S*(\.env|config\.ya?ml)(\s|$)"),
    ("stop or restart a system service", "cmd", r"^systemctl\b.*\s(stop|restart|disable|mask|kill|isolate)\b|^service\s+\S+\s+(stop|restart)\b"),
    ("kill every process", "cmd", r"^kill\b.*\s-0*1(\s|$)"),
    ("force-kill by name", "cmd", r"^(pkill|killall)\b.*\s(-9|-KILL|-SIGKILL|-s\s+(9|KILL)|-r|--regex)\b"),
    ("kill the stack's services", "cmd", r"^(pkill|killall)\b.*\b(hstack|celery|uvicorn|redis-server|postgres)\b"),
    ("kill by a looked-up process id", "raw", r"\bkill\b[^;&|]*\$\(\s*(pgrep|pidof)\b"),
    ("fork bomb", "raw", r":\s*\(\s*\)\s*\{"),
    ("download piped to a shell", "pipe", r"\b(curl|wget|fetch|http)\b.*\|\s*" + SHELL),
    ("download piped to an interpreter", "pipe", r"\b(curl|wget)\b.*\|\s*(sudo\s+)?(python3?|perl|ruby|node|php)\b"),
    ("shell reads a download (process substitution)", "raw", r"\b(bash|sh|zsh|source|\.)\s+<\(\s*(curl|wget)\b"),
    ("runs a download ($(curl ...))", "raw", r"\$\(\s*(curl|wget)\b[^)]*\)"),
    ("decoded content piped to a shell", "pipe", r"\b(base64\s+(-d|--decode|-D)|xxd\s+-r|openssl\s+(base64|enc)|rev|tr)\b.*\|\s*" + SHELL),
    ("xargs rm", "cmd", r"^xargs\b.*\brm\b"),
    ("find -exec rm", "cmd", r"^find\b.*\s-(exec|execdir|ok)\s+(\S*/)?(rm|shred)\b"),
    ("find -delete", "cmd", r"^find\b.*\s-delete\b"),
    ("find runs a program per file", "cmd", r"^find\b.*\s-(exec|execdir|ok|okdir)\b"),
    ("docker compose down/stop/kill/restart", "cmd", r"^(docker\s+compose|docker-compose)\b.*\s(down|stop|kill|restart|rm)\b"),
    ("docker stop/kill/restart/rm", "cmd", r"^docker\s+(container\s+)?(stop|kill|restart|rm|rmi)\b|^docker\s+(system|volume|image)\s+(prune|rm)\b"),
    ("launchctl unload", "cmd", r"^launchctl\s+(unload|remove|bootout)\b"),
    ("copy or move into /etc", "cmd", r"^(cp|mv|install|ln|rsync)\b.*\s/etc(/|\s|$)"),
    ("copy or move into credentials or shell rc files", "cmd", r"^(cp|mv|install|ln|tee)\b.*\s" + USER_FILES),
    ("write credentials or shell rc files", "cmd", r"(>|>>)\s*" + USER_FILES),
    ("in-place edit (sed -i)", "cmd", r"^sed\b.*\s(-i\S*|--in-place\S*)"),
    ("in-place edit (perl/ruby -i)", "cmd", r"^(perl|ruby)\b.*\s-[a-zA-Z]*i"),
    ("heredoc run as a script", "note", r"heredoc"),
    ("here-string or piped text run as a script", "note", r"here-string|piped (text|input)"),
    ("runs a file the gate cannot read", "note", r"^runs a file the gate cannot read"),
    ("runs a program whose name is only known when the command runs", "note", r"^runs a program whose name"),
    ("the line changes IFS", "note", r"^the line changes IFS"),
    ("the line sets a variable that makes programs load other code", "note", r"^the line sets "),
    ("tar deletes what it archives", "cmd", r"^tar\b.*\s--remove-files\b"),
    ("a script starts a program built at run time", "note", r"^a script starts a program"),
    ("a script deletes recursively", "note", r"^a script deletes recursively"),
    ("a script touches shell start-up or credential files", "note", r"^a script touches"),
    ("git reset --hard", "cmd", r"^git\b.*\sreset\b.*\s--hard\b"),
    ("git force push", "cmd", r"^git\b.*\spush\b.*\s(-f|--force|--force-with-lease|--mirror)\b|^git\b.*\spush\b.*\s\+\S+"),
    ("git push --delete", "cmd", r"^git\b.*\spush\b.*\s(-d|--delete)\b|^git\b.*\spush\s+\S+\s+:\S+"),
    ("git clean -f", "cmd", r"^git\b.*\sclean\b.*\s(-f|--force)\b"),
    ("git branch -D", "cmd", r"^git\b.*\sbranch\b.*\s(-D\b|(-d|--delete)\b.*\s(-f|--force)\b|(-f|--force)\b.*\s(-d|--delete)\b)"),
    ("git checkout/restore discards changes", "cmd", r"^git\b.*\s(checkout|restore)\s+(--\s+)?\.(\s|$)"),
    ("git stash drop/clear", "cmd", r"^git\b.*\sstash\s+(drop|clear)\b"),
    ("git history rewrite", "cmd", r"^git\b.*\s(filter-branch|filter-repo|reflog\s+expire|update-ref\s+-d)\b"),
    ("chmod +x then run", "raw", r"\bchmod\s+(u?\+x|[0-7]*[157][0-7]{0,2})\s+(\S+).*(&&|;)\s*(\./|bash\s|sh\s)"),
    ("sudo with -S/-A/-s/-i/-l style flags", "meta", "sudo-flags"),
    ("privilege escalation (sudo/su/doas)", "meta", "sudo"),
    ("package removal", "cmd", r"^(apt|apt-get|aptitude|yum|dnf|zypper|pacman|apk|brew|snap|port)\b.*\s(remove|purge|autoremove|erase|uninstall|del|-R\w*)\b"),
    ("language package removal", "cmd", r"^(pip3?|pipx|npm|yarn|pnpm|gem|cargo|conda|uv)\b.*\s(uninstall|remove|rm)\b"),
    ("dpkg remove", "cmd", r"^dpkg\b.*\s(-r|-P|--remove|--purge)\b"),
    ("truncate a file", "cmd", r"^truncate\b"),
    ("crontab -r", "cmd", r"^crontab\b.*\s-r\b"),
    ("install a crontab", "cmd", r"^crontab\s+(?!-l\b)(?!-e\b)\S+"),
    ("firewall change", "cmd", r"^(iptables|ip6tables|nft|ufw|firewall-cmd)\b"),
    ("move over a file (mv -f)", "cmd", r"^mv\b.*\s-f\b"),
    ("move to /dev/null", "cmd", r"^mv\b.*\s/dev/null(\s|$)"),
    ("mount or unmount", "cmd", r"^(mount|umount|swapoff|swapon)\b"),
    ("kernel modules or sysctl", "cmd", r"^(modprobe|insmod|rmmod)\b|^sysctl\b.*\s-w\b|^setenforce\s+0\b"),
    ("user accounts", "cmd", r"^(useradd|userdel|usermod|passwd|chpasswd|groupdel)\b"),
    ("rsync --delete", "cmd", r"^rsync\b.*\s--delete"),
    ("destroy infrastructure", "cmd", r"^(terraform|tofu)\s+destroy\b|^kubectl\b.*\sdelete\b"),
    ("download into a system folder", "cmd", r"^(curl|wget)\b.*\s(-o|-O|--output)\s*" + SYS),
    ("extract over /", "cmd", r"^tar\b.*\s-C\s*/(\s|$)"),
    ("inline interpreter script", "cmd", r"^(python[0-9.]*|perl|ruby|node|nodejs|php|lua)\s+(.*\s)?-(c|e|E|r)\b"),
    ("awk system()", "cmd", r"^g?awk\b.*\bsystem\s*\("),
    ("nested shell command (sh -c / eval)", "note", r"nested shell command"),
    ("reverse shell or raw socket", "raw", r"/dev/(tcp|udp)/|\b(nc|ncat|netcat)\b.*\s-(e|c)\b"),
    ("LD_PRELOAD injection", "raw", r"\bLD_PRELOAD="),
]
COMPILED = [(desc, scope, re.compile(pattern)) for desc, scope, pattern in RULES]
SUDO_FLAGS = {"-S", "--stdin", "-A", "--askpass", "-s", "--shell", "-i", "--login", "-l", "--list", "-E"}


def dangerous(analysis: Analysis) -> str | None:
    """The first dangerous-pattern description the analysed command line matches, or None."""
    found = matches(analysis)
    return found[0][0] if found else None


def matches(analysis: Analysis) -> list[tuple[str, str]]:
    """Every (description, what matched it) in the line: a simple command, a pipeline, the text or a note."""
    texts = {"cmd": [c.text() for c in analysis.commands],
             "pipe": [" | ".join(c.text() for c in p) for p in analysis.pipelines if len(p) > 1],
             "raw": analysis.texts, "note": sorted(analysis.notes)}
    found: list[tuple[str, str]] = []
    for desc, scope, pattern in COMPILED:
        if scope == "meta":
            found += [(desc, c.text()) for c in analysis.commands if _meta(desc, c)]
        else:
            found += [(desc, t) for t in texts[scope] if pattern.search(t)]
    return list(dict.fromkeys(found))


def _meta(desc: str, cmd) -> bool:
    escalates = bool({"sudo", "doas"} & set(cmd.prefixes)) or cmd.name in ("su", "sudo", "doas", "pkexec")
    if desc.startswith("sudo with"):
        return bool(cmd.sudo_flags & SUDO_FLAGS)
    return escalates
