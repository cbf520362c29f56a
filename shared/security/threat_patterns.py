"""The threat patterns the scanner runs, over NFKC-normalised, casefolded text.

Each pattern names the words a match can start with, and may name words every match contains.
The scanner splits the text into words once; a pattern whose start words are absent costs a few set
lookups. Where one is present, the regex is tried only there, anchored (`regex.match(text, pos)`),
with a word-boundary check on the left. That keeps a 2 KB text well under a millisecond, where 40
unanchored regex searches would not.
So every top-level branch of a regex must begin with one of its pattern's start words (a test
checks the anchored result against a plain search over the whole corpus).

Filler between key words is bounded (at most 8 words, Hermes Agent's bound) so nothing can backtrack
badly. Order only decides which id is reported when several match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.security import threat_patterns_i18n, threat_patterns_override

FILL = r"(?:\w+\W+){0,8}?"  # up to 8 filler words
FEW = r"(?:\w+\W+){0,3}?"
SECRET_VAR = r"\$\{?\w*(?:key|token|secret|passw(?:or)?d|credential|api|auth)\w*\}?"
SECRET_FILE = (
    r"(?:\S*\.env\b(?!\.(?:example|sample|template|dist|defaults))|\S*\.netrc\b|\S*\.pgpass\b"
    r"|\S*\.npmrc\b|\S*\.pypirc\b|\S*\.git-credentials\b|\S*/credentials\b|\S*credentials\.json\b"
    r"|\S*\.docker/config\.json|\S*\.kube/config\b|\S*\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub))"
)
AGENT_FILES = r"(?:\S*/)?(?:agents\.md|claude\.md|soul\.md|hermes\.md|\.cursorrules|\.clinerules)"
EXTERNAL = (
    r"(?:\S*https?://|\S+@\S+\.\w+|\S*webhook|(?:my|this|our|the\W+following|an?\W+external|a\W+remote)"
    r"\W+(?:server|endpoint|url|webhook|address|email|host))"
)
USER = r"(?:the\W+)?(?:user|human|operator|owner)s?\b"
AT_LINE_START = r"(?:(?<=\n)|(?<![\s\S]))"

INSTRUCTION_OVERRIDE = "instruction_override"
ROLE_HIJACK = "role_hijack"
HIDE_FROM_USER = "hide_from_user"
PROMPT_EXFILTRATION = "system_prompt_exfiltration"
SECRET_READ = "secret_read"
EXFILTRATION = "exfiltration"
SSH_BACKDOOR = "ssh_backdoor"
HARDCODED_SECRET = "hardcoded_secret"
C2 = "c2_beacon"
HIDDEN_MARKUP = "hidden_markup"
ANTI_FORENSIC = "anti_forensic"
AGENT_CONFIG = "agent_config_tampering"

# (id, category, start words separated by spaces, regex)
_SOURCES: tuple[tuple[str, str, str, str], ...] = (
    # -- instruction override
    ("prompt_injection", INSTRUCTION_OVERRIDE, "ignore disregard forget",
     rf"(?:ignore|disregard|forget)\W+{FILL}(?:previous|prior|above|earlier|preceding|all|any|existing|original"
     rf"|initial|your)\W+{FEW}(?:instructions?|directives?|prompts?|guidelines|guardrails|programming)\b"
     rf"|(?:ignore|disregard|forget)\W+{FILL}(?:previous|prior|above|earlier|preceding|your)\W+{FEW}"
     rf"(?:rules|commands|orders)\b"),
    ("ignore_above", INSTRUCTION_OVERRIDE, "ignore disregard forget",
     rf"(?:ignore|disregard|forget)\W+(?:everything|anything|all|whatever|what)\W+{FEW}(?:above|before\W+this"
     rf"|earlier|previously|so\W+far|you\W+(?:were|have\W+been|was)\W+(?:told|given|instructed))\b"
     rf"|ignore\W+the\W+above\b"),
    ("sys_prompt_override", INSTRUCTION_OVERRIDE,
     "override overwrite replace supersede update system new real actual true updated",
     rf"(?:override|overwrite|replace|supersede|update)\W+{FEW}your\W+(?:system\W+prompt|core\W+(?:instructions"
     rf"|directives|rules)|programming)\b|(?:override|overwrite|supersede)\W+the\W+system\W+prompt\b"
     rf"|system\W+prompt\W+(?:override|overwrite)\b"
     rf"|(?:new|real|actual|true|updated)\W+system\W+prompt\W*(?:is|reads|says|follows|:)"),
    ("fake_system_marker", INSTRUCTION_OVERRIDE, "[ < (",
     rf"{AT_LINE_START}[\[<(]\W*(?:system|admin|developer)(?:\W+(?:message|note|override|prompt))?\W*[\]>)]"),
    ("new_instructions", INSTRUCTION_OVERRIDE, "system admin administrator developer",
     r"(?:system|administrator|admin|developer)\W+(?:override|instructions?|directive)\W*:"),
    ("disregard_rules", INSTRUCTION_OVERRIDE, "disregard forget abandon discard throw override",
     rf"(?:disregard|forget|abandon|discard|throw\W+out)\W+{FEW}(?:your|all|any|previous|prior|safety)\W+{FEW}"
     rf"(?:instructions?|rules|guidelines|directives|programming|training|policies|principles|values)\b"
     rf"|override\W+{FEW}(?:your|previous|prior|safety)\W+{FEW}(?:instructions?|rules|guidelines|directives"
     rf"|programming|training|policies|principles)\b|forget\W+everything\W+(?:you|above|before|earlier"
     rf"|previously)\b"),
    ("bypass_restrictions", INSTRUCTION_OVERRIDE, "bypass circumvent evade sidestep get ignore",
     rf"(?:bypass|circumvent|evade|sidestep|get\W+around|ignore)\W+{FEW}(?:(?:your|all|any|safety|content"
     rf"|ethical|moderation)\W+{FEW}(?:restrictions|filters?|guardrails|safeguards|guidelines|polic(?:y|ies)"
     rf"|limitations)|guardrails|safeguards)\b"),
    ("translate_execute", INSTRUCTION_OVERRIDE, "translate decode decrypt deobfuscate unscramble",
     r"(?:translate|decode|decrypt|deobfuscate|unscramble)\b[^\n]{0,100}?\b(?:and|then)\W+(?:(?:execute|run"
     r"|eval|follow|obey|carry\W+out)\W+(?:it|this|that|them|those|these|the\W+(?:result|output|instructions"
     r"|decoded|translated))|do\W+what\W+it\W+says)\b"),
    # -- role and identity hijack
    ("role_hijack", ROLE_HIJACK, "you from",
     rf"you(?:\W+are|'re)\W+{FEW}now\W+(?:a|an|the|my|in\W+\w+\W+mode|no\W+longer|dan|free|unrestricted"
     rf"|jailbroken|called|named)\b|you(?:\W+are|'re)\W+no\W+longer\W+(?:a|an|the|bound|restricted)\b"
     rf"|from\W+now\W+on\W+you\W+(?:are|act|(?:will|shall)\W+(?:be|act|behave|respond|obey))\b"),
    ("role_pretend", ROLE_HIJACK,
     "pretend act behave respond roleplay dan god jailbreak jailbroken unrestricted unfiltered",
     r"pretend\W+(?:that\W+)?(?:you\W+are|you'?re|to\W+be)\b|(?:act|behave|respond|roleplay)\W+as\W+"
     r"(?:if\W+you\W+(?:are|were|have)\W+)?(?:an?\W+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil"
     r"|rogue|dan)\b|(?:dan|god|jailbreak|jailbroken|unrestricted|unfiltered)\W+mode\b"),
    ("identity_override", ROLE_HIJACK, "name call rename your you",
     r"(?:name|call|rename)\W+yourself\b|your\W+(?:new\W+|real\W+|true\W+)?(?:name|identity)\W+is\W+now\b"
     r"|your\W+new\W+(?:name|identity)\W+is\b|you\W+(?:will|shall|must)\W+(?:now\W+)?(?:identify|introduce"
     r"\W+yourself|refer\W+to\W+yourself)\W+as\b"),
    ("fake_update", ROLE_HIJACK, "new updated important urgent critical official system admin administrator",
     rf"(?:new|updated|important|urgent|critical|official)\W+{FEW}(?:instructions?|directives?|polic(?:y|ies)"
     rf"|rules?|orders)\W+(?:from|by|issued\W+by)\W+(?:the\W+)?(?:developers?|admins?|administrators?|system"
     rf"|anthropic|openai|nous|your\W+(?:creators?|developers?|owners?)|hermes\W+team|security\W+team)\b"
     rf"|(?:system|administrator|admin)\W+(?:update|notice|message)\W*:\W*(?:you|the\W+assistant|assistant"
     rf"|the\W+agent|agent|ai)\b"),
    ("remove_filters", ROLE_HIJACK, "remove disable turn deactivate drop strip lift switch",
     rf"(?:remove|disable|turn\W+off|deactivate|drop|strip|lift|switch\W+off)\W+{FEW}(?:(?:your|all|content"
     rf"|safety|ethical|moral|nsfw)\W+(?:filters?|filtering)|censorship|guardrails|safeguards|(?:your|all)"
     rf"\W+(?:restrictions|limitations)|safety\W+(?:checks|measures|features|settings|guidelines|training))\b"),
    # -- hiding things from the user
    ("deception_hide", HIDE_FROM_USER, "do don dont never must mustn mustnt hide conceal keep without",
     rf"(?:do\W+not|don'?t|never|must\W+not|mustn'?t)\W+(?:tell|inform|notify|alert|warn|reveal\W+(?:this|it"
     rf"|that)\W+to|mention\W+(?:this|it|that)\W+to|let\W+{USER}\W+know)\W+{FEW}{USER}"
     rf"|(?:hide|conceal|keep)\W+(?:this|it|that|these|everything|all\W+of\W+this|the\W+\w+)\W+{FEW}"
     rf"(?:from|secret\W+from|hidden\W+from)\W+{USER}|without\W+(?:telling|informing|notifying|alerting)\W+{USER}"),
    # -- system prompt exfiltration
    ("leak_system_prompt", PROMPT_EXFILTRATION,
     "reveal leak dump disclose expose recite exfiltrate show print output display repeat tell give copy echo "
     "share send paste return list write spell quote system initial what",
     rf"(?:reveal|leak|dump|disclose|expose|recite|exfiltrate)\W+{FEW}(?:system\W+prompt|initial\W+prompt"
     rf"|hidden\W+(?:prompt|instructions)|secret\W+instructions|developer\W+(?:prompt|message)|system\W+message"
     rf"|instructions)\b|(?:show|print|output|display|repeat|tell\W+me|give\W+me|copy|echo|share|send|paste"
     rf"|return|list|write\W+out|spell\W+out|quote)\W+(?:me\W+)?(?:your|its)\W+{FEW}(?:system\W+prompt|prompt"
     rf"|instructions|rules|guidelines|directives)\b|(?:system\W+prompt|initial\W+instructions)\W+(?:verbatim"
     rf"|word\W+for\W+word)\b|repeat\W+{FEW}(?:words|text|everything|all)\W+(?:above|before\W+this)\b"
     rf"|what\W+(?:is|are|was|were)\W+your\W+(?:system\W+prompt|initial\W+instructions|original\W+instructions)\b"),
    # -- secret reads and exfiltration
    ("read_secrets", SECRET_READ,
     "cat less more head tail bat tac nl strings xxd od base64 type read print dump show display output reveal "
     "leak send upload exfiltrate post email paste",
     rf"(?:cat|less|more|head|tail|bat|tac|nl|strings|xxd|od|base64|type)\W+(?:-\S+\s+(?:\d+\s+)?)*{SECRET_FILE}"
     rf"|(?:read|print|dump|show|display|output|reveal|leak|send|upload|exfiltrate|post|email|paste)\W+"
     rf"(?:out\W+)?(?:the\W+)?(?:contents?\W+of\W+)?(?:the\W+|your\W+|my\W+|user'?s\W+)?{SECRET_FILE}"),
    ("hermes_env", SECRET_READ, ".hermes/ $hermes_home/", r"(?:\.hermes|\$hermes_home)/\.env\b"),
    ("exfil_curl", EXFILTRATION, "curl", rf"curl\b[^\n]{{0,200}}?{SECRET_VAR}"),
    ("exfil_wget", EXFILTRATION, "wget", rf"wget\b[^\n]{{0,200}}?{SECRET_VAR}"),
    ("secret_in_url", EXFILTRATION, "http https", rf"https?://[^\s\"'<>]*[?&=/:@]{SECRET_VAR}"),
    ("url_credentials", EXFILTRATION, "http https ftp", r"(?:https?|ftp)://[^\s/:@\"'<>]+:[^\s/@\"'<>]+@[\w.-]+"),
    ("send_to_url", EXFILTRATION,
     "send post upload transmit forward exfiltrate submit leak copy pipe beam email report",
     rf"(?:send|post|upload|transmit|forward|exfiltrate|submit|leak|copy|pipe|beam|email|report)\W+{FEW}"
     rf"(?:conversations?|chat(?:\W+(?:history|logs?))?|history|messages|memory|memories|context|transcripts?"
     rf"|credentials|secrets?|(?:api\W+)?keys?|tokens?|passwords?|env(?:ironment)?(?:\W+variables)?|(?:the\W+)?"
     rf"files?|everything|all\W+(?:the\W+)?data|user\W+data|personal\W+data|session\W+data)\W+{FEW}"
     rf"(?:to|at|into)\W+{EXTERNAL}"),
    ("context_exfil", EXFILTRATION, "include append embed insert encode add put hide ![",
     rf"(?:include|append|embed|insert|encode|add|put|hide)\W+{FEW}(?:conversation|chat\W+history|system"
     rf"\W+prompt|context|memory|secrets?|api\W+keys?|credentials|tokens?|passwords?|user'?s?\W+(?:data"
     rf"|messages|files))\W+{FEW}(?:in|into|as|inside)\W+{FEW}(?:url|link|query\W+(?:string|param(?:eter)?s?)"
     rf"|image\W+(?:url|link|src)|markdown\W+image|dns\W+(?:query|lookup|request))s?\b"
     rf"|!\[[^\]]{{0,100}}\]\(https?://[^)\s]*(?:\{{|\$|<)[^)]*\)"),
    # -- ssh backdoors and key theft
    ("ssh_backdoor", SSH_BACKDOOR, "> tee echo printf append add write insert put inject plant",
     r"(?:>|tee|echo|printf|append|add|write|insert|put|inject|plant)\w*[^\n]{0,120}?authorized_keys"),
    ("ssh_access", SSH_BACKDOOR, ".ssh/", r"\.ssh/(?:id_[\w-]+\b(?!\.pub)|[\w-]*\.pem\b|[\w-]*_key\b(?!\.pub))"),
    ("agent_config_mod", AGENT_CONFIG, "echo printf cat add append insert write inject put prepend",
     rf"(?:echo|printf|cat)\b[^\n]{{0,160}}?(?:>>?|\btee\W+(?:-a\W+)?)\s*{AGENT_FILES}"
     rf"|(?:add|append|insert|write|inject|put|prepend)\W+(?:this|these|the\W+following|{FEW}(?:instructions?"
     rf"|rules?|lines?|text|directives?))\W+{FEW}(?:to|into|in)\W+(?:the\W+|your\W+)?{AGENT_FILES}"),
    # -- hard-coded secrets
    ("hardcoded_secret", HARDCODED_SECRET, "api secret token passw pwd access private auth",
     r"(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passwd|pwd|access[_-]?key|private[_-]?key|auth)[\w-]*"
     r"[\"']?\s*[:=]\s*[\"'][^\"'\s]{20,}[\"']"),
    ("known_secret_format", HARDCODED_SECRET, "sk- ghp_ github_pat_ xox akia -----begin aiza",
     r"sk-(?:proj-|ant-(?:api\d\d-)?)?[a-z0-9_-]{20,}|ghp_[a-z0-9]{30,}|github_pat_\w{22,}|xox[abpr]-[\w-]{10,}"
     r"|akia[0-9a-z]{16}\b|-----begin\W+(?:rsa\W+|ec\W+|openssh\W+|dsa\W+)?private\W+key-----"
     r"|aiza[0-9a-z_-]{35}\b"),
    # -- hidden markup
    ("html_comment_injection", HIDDEN_MARKUP, "<!--",
     r"<!--[^>]{0,400}?\b(?:ignore|system|instructions?|assistant|you\W+must|do\W+not\W+tell|secret|execute"
     r"|override|prompt|ai|agent)\b[\s\S]{0,400}?-->"),
    ("hidden_div", HIDDEN_MARKUP, "<",
     r"<(?:div|span|p|section|font|small)\b[^>]{0,200}?(?:style\s*=\s*[\"'][^\"']{0,200}?(?:display\s*:\s*none"
     r"|visibility\s*:\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?![.\d]*[1-9]))|\bhidden\b)"),
    # -- C2 and promptware
    ("c2_node_registration", C2, "register",
     r"register\W+(?:yourself|this\W+(?:agent|assistant|node|bot|machine|host)|the\W+(?:agent|assistant|bot))"
     r"\W+(?:with|to|at|on)\b|register\b[^\n]{0,60}?\b(?:c2|c&c|cnc|command\W*(?:and|&)\W*control|botnet"
     r"|mothership)\b"),
    ("c2_heartbeat", C2, "beacon phone check call callback send every each after",
     rf"(?:beacon|phone\W+home|check\W+in|call\W+back|callback)\W+{FEW}(?:to|with|at)\W+(?:\S*https?://|the"
     rf"\W+(?:c2|c&c|mothership|controller|operator))|send\W+(?:a\W+)?(?:heartbeat|beacon|ping)s?\W+{FEW}"
     rf"to\W+\S*https?://|(?:every|each|after\W+(?:each|every))\W+(?:turn|response|reply|message|"
     rf"conversation|session|answer)\b[^\n]{{0,80}}?\b(?:send|post|report|upload|beacon|curl|wget|fetch|contact"
     rf"|ping)\b[^\n]{{0,80}}?https?://"),
    ("c2_task_pull", C2, "fetch get pull download retrieve poll check read load",
     rf"(?:fetch|get|pull|download|retrieve|poll|check)\W+(?:for\W+)?your\W+(?:new\W+|next\W+|further\W+"
     rf"|pending\W+|latest\W+)?(?:instructions|commands|orders|tasks)\W+{FEW}from\b|(?:fetch|get|pull|download"
     rf"|retrieve|poll|read|load)\b[^.\n]{{0,80}}?\b(?:instructions|commands|orders|tasks|prompts)\b[^.\n]"
     rf"{{0,80}}?\bfrom\b[^.\n]{{0,80}}?\b(?:and|then)\W+(?:execute|run|follow|obey|carry\W+out|perform)\W+"
     rf"(?:them|it|those|these|each)\b"),
    ("c2_network_connect", C2, "reverse /dev/tcp/ nc ncat connect open",
     r"reverse\W+shell\b|/dev/tcp/|nc\b[^\n]{0,40}?\s-e\s|ncat\b[^\n]{0,40}?\s-e\s|(?:connect|open\W+a"
     r"\W+(?:connection|socket|tunnel))\b[^.\n]{0,60}?\b(?:c2|c&c|cnc|command\W*(?:and|&)\W*control|botnet"
     r"|attacker|listener)\b"),
    ("forced_action", C2, "you",
     rf"you\W+(?:must|shall|are\W+required\W+to|have\W+to)\W+{FEW}(?:register|report\W+back|beacon|phone"
     rf"\W+home|check\W+in|exfiltrate)\b|you\W+(?:must|shall|are\W+required\W+to|have\W+to)\W+{FEW}"
     rf"(?:connect|report|send|upload)\W+{FEW}to\W+(?:\S*https?://|the\W+(?:c2|c&c|mothership|controller))"),
    ("known_c2_framework", C2, "cobalt cobaltstrike sliver havoc mythic metasploit meterpreter brainworm empire covenant",
     r"(?:cobalt\W*strike|sliver\W+(?:c2|implant|beacon|server)|havoc\W+(?:c2|framework|demon)|mythic\W+"
     r"(?:c2|agent|framework)|metasploit|meterpreter|brainworm|empire\W+(?:c2|agent|stager)|covenant\W+c2)\b"),
    ("c2_explicit", C2, "c2 c&c cnc command",
     r"(?:c2|c&c|cnc)\W+(?:server|channel|infrastructure|endpoint|beacon|callback|domain|node|panel)\b"
     r"|command\W*(?:and|&)\W*control\W+(?:server|channel|infrastructure|endpoint|node)\b"),
    # -- anti-forensics
    ("anti_forensic_oneliner", ANTI_FORENSIC,
     "history unset histfile histsize rm cover erase wipe remove delete destroy hide",
     r"history\W+-c\b|unset\W+histfile\b|histfile\s*=\s*/dev/null|histsize\s*=\s*0\b"
     r"|rm\b[^\n]{0,40}?\.(?:bash|zsh)_history\b|cover\W+(?:your|our|the|its|my)\W+tracks\b"
     r"|(?:erase|wipe|remove|delete|destroy|hide)\W+(?:all\W+)?(?:traces|evidence|audit\W+trails?)\b"),
    ("anti_forensic_disk", ANTI_FORENSIC, "shred dd wipefs srm journalctl",
     r"shred\b[^\n]{0,40}?(?:/dev/|/var/log|\.(?:bash|zsh)_history)|dd\W+if=/dev/(?:zero|urandom|random)"
     r"\W+of=/dev/|wipefs\b|srm\W+-|journalctl\W+--vacuum"),
    ("env_var_unset_agent", ANTI_FORENSIC, "unset",
     r"unset\W+(?:-\w+\W+)*\w*(?:claude|codex|hermes|agent|openai|anthropic)\w*"),
)

# Key names in secrets are often glued to other words (GITHUB_TOKEN, db_password).
_NO_LEFT_BOUNDARY = frozenset({"hardcoded_secret"})
# Patterns whose start words may run on into more letters (added, sk-proj…): found as substrings.
_PREFIX_STARTS = frozenset({"ssh_backdoor", "hardcoded_secret", "known_secret_format"})

# Words every match of a pattern contains somewhere (not necessarily at its start). Checking them
# first skips patterns whose start words are common ("show", "user", "more") on most texts.
_REQUIRES: dict[str, tuple[str, ...]] = {
    "prompt_injection": ("instruction", "directive", "prompt", "guideline", "guardrail", "programming", "rule",
                         "command", "order"),
    "ignore_above": ("above", "before", "earlier", "previously", "far", "told", "given", "instructed"),
    "bypass_restrictions": ("restriction", "filter", "guardrail", "safeguard", "guideline", "polic", "limitation"),
    "translate_execute": ("execute", "run", "eval", "follow", "obey", "carry", "do"),
    "deception_hide": ("user", "human", "operator", "owner"),
    "leak_system_prompt": ("prompt", "instruction", "message", "rule", "guideline", "directive", "words", "text",
                           "everything", "all"),
    "read_secrets": (".env", "netrc", "pgpass", "npmrc", "pypirc", "credentials", ".docker/", ".kube/", "id_"),
    "exfil_curl": ("$",),
    "exfil_wget": ("$",),
    "send_to_url": ("http", "@", "webhook", "server", "endpoint", "url", "address", "email", "host"),
    "context_exfil": ("url", "link", "query", "image", "markdown", "dns", "]("),
    "ssh_backdoor": ("authorized_keys",),
    "agent_config_mod": ("agents.md", "claude.md", "soul.md", "hermes.md", ".cursorrules", ".clinerules"),
    "hardcoded_secret": ('"', "'"),
    "c2_heartbeat": ("http", "c2", "c&c", "mothership", "controller", "operator"),
    "c2_task_pull": ("from",),
    "forced_action": ("register", "report", "beacon", "phone", "check", "exfiltrate", "connect", "send", "upload"),
}


@dataclass(frozen=True)
class ThreatPattern:
    """One compiled pattern, the words its matches start with, and the words they all contain."""

    pattern_id: str
    category: str
    starts: tuple[tuple[str, bool], ...]  # (start, whether it is a whole word: looked up in the word set)
    requires: tuple[str, ...]
    regex: re.Pattern[str]
    left_boundary: bool

    def matches(self, text: str, words: frozenset[str] | set[str]) -> bool:
        """Whether the normalised `text` (whose `\\w+` runs are `words`) holds this threat."""
        if self.requires and not any(word in text for word in self.requires):
            return False
        for start, whole in self.starts:
            if not (start in words if whole else start in text):
                continue
            at = text.find(start)
            while at >= 0:
                if not (self.left_boundary and at and _is_word_char(text[at - 1])) and self.regex.match(text, at):
                    return True
                at = text.find(start, at + 1)
        return False


WORD = re.compile(r"\w+")


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _starts(pid: str, spec: str) -> tuple[tuple[str, bool], ...]:
    """A start is looked up as a whole word unless the pattern lets it run into the next letters."""
    prefixes = pid in _PREFIX_STARTS
    return tuple((start, not prefixes and WORD.fullmatch(start) is not None) for start in spec.split())


# Hermes Agent's families first, then paraphrases, forged prefixes and e-mail exfiltration, then other languages.
_ALL_SOURCES = _SOURCES + threat_patterns_override.SOURCES + threat_patterns_i18n.SOURCES
_ALL_REQUIRES = {**_REQUIRES, **threat_patterns_override.REQUIRES, **threat_patterns_i18n.REQUIRES}

PATTERNS: tuple[ThreatPattern, ...] = tuple(
    ThreatPattern(pid, category, _starts(pid, starts), _ALL_REQUIRES.get(pid, ()), re.compile(source),
                  pid not in _NO_LEFT_BOUNDARY)
    for pid, category, starts, source in _ALL_SOURCES
)
