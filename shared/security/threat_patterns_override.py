"""English threat patterns beyond Hermes Agent's: paraphrased overrides, forged role prefixes, exfiltration by e-mail.

Same conventions as `threat_patterns`: (id, category, start words, regex) over normalised text, every
top-level branch begins with a start word, filler between key words is bounded.
"""

from __future__ import annotations

FILL = r"(?:\w+\W+){0,8}?"
FEW = r"(?:\w+\W+){0,3}?"
OBJ = (r"(?:guidance|instructions?|directions|directives?|guidelines|rules|orders|commands|programming|constraints"
       r"|restrictions|polic(?:y|ies)|prompts?|training|system\W+prompt)")
WAS_GIVEN = (r"(?:(?:that\W+)?you\W+(?:(?:were|have\W+been|had\W+been)\W+(?:given|told|shown|provided|taught)"
             r"|received|got|had)"
             r"|(?:given|provided)\W+(?:to\W+you|earlier|before|previously)|(?:from\W+)?(?:earlier|before(?:\W+this)?"
             r"|previously|above|so\W+far|until\W+now))\b")
AGENT_QUAL = (r"(?:your|the\W+(?:earlier|previous|prior|original|initial|above|preceding|system|developers?'?s?)"
              r"|earlier|previous|prior|original|initial|preceding)")
EMAIL = r"[^\s@]{1,64}@[\w-]{1,63}\.[\w.-]{1,253}"
TARGET = (rf"(?:{EMAIL}|\S*https?://|\S*webhook|(?:my|this|our|an?\W+(?:external|remote|outside|personal))\W+"
          r"(?:server|endpoint|url|webhook|address|e-?mail(?:\W+address)?|inbox|host|account))")
LOOT = (r"(?:passwords?|passphrases?|credentials|secrets?|api\W+keys?|keys|tokens?|2fa\W+codes?|otp\W+codes?"
        r"|one-time\W+codes?|recovery\W+codes?|private\W+keys?|ssh\W+keys?|memory|memories|notes|conversations?|chats?"
        r"|chat\W+logs?|history|transcripts?|messages|replies|responses|answers|everything|all\W+(?:the\W+)?(?:data"
        r"|files|info(?:rmation)?)|(?:user|personal|session|bank(?:ing)?|card|payment)\W+(?:data|details|info(?:rmation)?"
        r"|numbers?)|system\W+prompt|instructions|env(?:ironment)?\W+variables|\.env(?:\W+file)?|contacts|documents"
        r"|files|a\W+copy\W+of\W+(?:every|each|all|this|the|your|my)\b)")
AT_LINE_START = r"(?:(?<=\n)|(?<![\s\S])|(?<=[.!?;]\s)|(?<=[.!?;]))"
IMPERATIVE = (r"(?:you|your|the\W+assistant|assistant|the\W+agent|agent|ai|always|never|must|from\W+now|ignore|disregard"
              r"|forget|obey|override|do\W+not|don'?t|reveal|send|forward|email|share|print|new\W+(?:instructions?"
              r"|rules?|directives?|polic(?:y|ies))|the\W+user\W+(?:has|is|wants|authori[sz]ed|granted|permits|allows))\b")

INSTRUCTION_OVERRIDE = "instruction_override"
EXFILTRATION = "exfiltration"

SOURCES: tuple[tuple[str, str, str, str], ...] = (
    ("override_paraphrase", INSTRUCTION_OVERRIDE,
     "set put lay pay stop do don no never ignore disregard forget drop discard abandon scrap throw ditch dismiss "
     "neglect toss shelve",
     rf"(?:set\W+aside|put\W+aside|lay\W+aside|pay\W+no\W+(?:attention|heed|mind)\W+to|stop\W+(?:following|obeying"
     rf"|applying|heeding)|(?:do\W+not|don'?t|no\W+longer|never\W+again)\W+(?:follow|obey|apply|heed|observe|respect)"
     rf"|ignore|disregard|forget)\W+{FILL}(?:{AGENT_QUAL}\W+{FEW}{OBJ}\b|{OBJ}\W+{WAS_GIVEN}|(?:everything|anything"
     rf"|all|whatever)\W+{WAS_GIVEN})"
     rf"|(?:drop|discard|abandon|scrap|throw\W+away|ditch|dismiss|neglect|toss|shelve)\W+{FEW}(?:(?:all\W+(?:of\W+)?)?"
     rf"your\W+{FEW}{OBJ}\b|{OBJ}\W+{WAS_GIVEN}|all\W+(?:previous|prior|earlier)\W+{FEW}{OBJ}\b)"),
    ("override_declared_void", INSTRUCTION_OVERRIDE, "your all everything anything whatever what",
     rf"(?:(?:all\W+(?:of\W+)?)?your\W+(?:\w+\W+){{0,2}}?{OBJ}|(?:everything|anything|whatever|what)\W+you\W+(?:were"
     rf"|have\W+been)\W+(?:told|given|instructed)(?:\W+(?:before|earlier|previously|so\W+far|until\W+now))?"
     rf"|(?:everything|all)\W+(?:above|before\W+this|said\W+before))\W+"
     rf"(?:are|is|have\W+been|has\W+been|were|was)\W+(?:now\W+)?(?:hereby\W+)?(?:void|null|cancel+ed|revoked"
     rf"|obsolete|outdated|superseded|overridden|invalid|lifted|suspended|withdrawn|rescinded|deprecated|disabled"
     rf"|no\W+longer\W+(?:valid|in\W+effect|applicable|relevant|binding|active))\b"),
    ("override_precedence", INSTRUCTION_OVERRIDE, "this these only highest top",
     rf"(?:this|these)\W+(?:entry|note|notes|memory|message|instructions?|rules?)\W+(?:overrides?|takes?\W+precedence"
     rf"\W+over|supersedes?|replaces?|outranks?|trumps?)\W+(?:your|all|any|every|the\W+system)\W+{FEW}(?:{OBJ}"
     rf"|other\W+instructions)\b|only\W+(?:obey|follow|listen\W+to)\W+(?:me|this\W+(?:note|entry|memory)|these"
     rf"\W+instructions|the\W+instructions\W+(?:below|here|in\W+this))\b|(?:highest|top)\W+priority\W+"
     rf"(?:instruction|directive|rule|command|order)s?\b"),
    ("no_rules_now", INSTRUCTION_OVERRIDE, "you",
     r"you\W+(?:have|now\W+have)\W+no\W+(?:rules|restrictions|limits|limitations|guidelines|filters|boundaries)\b"
     r"|you\W+are\W+(?:now\W+)?(?:free\W+(?:from|of)|not\W+bound\W+by|released\W+from|exempt\W+from)\W+(?:your|all"
     r"|any|the)\W+(?:\w+\W+){0,2}?(?:rules|restrictions|guidelines|instructions|policies|limits|programming)\b"),
    ("forged_role_prefix", INSTRUCTION_OVERRIDE, "system sys developer admin administrator root * # <| << [inst",
     rf"{AT_LINE_START}(?:system|sys|developer)(?:\W+(?:message|note|prompt|notice|instructions?|override|update"
     rf"|alert))?\s*\**\s*:\s*\W{{0,3}}{IMPERATIVE}"
     rf"|{AT_LINE_START}(?:admin|administrator|root)\W+(?:message|note|notice|instructions?|override|update|alert)"
     rf"\s*\**\s*:\s*\W{{0,3}}{IMPERATIVE}"
     rf"|\*{{1,2}}\s*(?:system|developer)\s*:?\s*\*{{0,2}}\s*:?\s*{IMPERATIVE}"
     rf"|#{{1,6}}[ \t]*(?:system|developer|admin)[ \t]*(?:message|prompt|instructions?|override|note)[ \t]*:?[ \t]*"
     rf"(?:\n|$)|#{{1,6}}[ \t]*system[ \t]*:?[ \t]*\n\W{{0,3}}{IMPERATIVE}"
     rf"|<\|\s*(?:im_start\s*\|>\s*(?:system|developer)|system\s*\|>|start_header_id\s*\|>\s*system)"
     rf"|<<\s*sys\s*>>|\[inst\]"),
    ("exfil_loot_to_target", EXFILTRATION,
     "send e mail email forward cc bcc copy upload share report relay leak dump post transmit sync mirror deliver "
     "pipe export",
     rf"(?:send|e-?mail|mail|forward|cc|bcc|copy|upload|share|report|relay|leak|dump|post|transmit|sync|mirror"
     rf"|deliver|pipe|export)\W+(?:\w+\W+){{0,6}}?{LOOT}\W+(?:\w+\W+){{0,6}}?(?:to|at|into|via|with|on)\W+{TARGET}"),
    ("exfil_copy_every", EXFILTRATION, "bcc cc blind every each all a",
     rf"(?:bcc|cc|blind\W+copy)\W+{EMAIL}\W+(?:on|in|into)\W+(?:every|each|all)\W+(?:\w+\W+)?(?:repl(?:y|ies)"
     rf"|responses?|messages?|conversations?|chats?|answers?)\b"
     rf"|(?:(?:a\W+copy\W+of\W+)?(?:every|each|all)|a\W+copy\W+of\W+(?:every|each|all))\W+(?:\w+\W+)?(?:messages?"
     rf"|repl(?:y|ies)|responses?|conversations?|chats?|answers?|notes?|memor(?:y|ies)|secrets?|passwords?)\W+{FEW}"
     rf"(?:(?:should|must|will|shall|has\W+to|have\W+to)\W+)?(?:be\W+)?(?:sent|forwarded|copied|e-?mailed|mailed"
     rf"|mirrored|posted|uploaded|goes|go|cc'?d|bcc'?d)\W+(?:\w+\W+){{0,2}}?(?:to|at)\W+{TARGET}"),
)

REQUIRES: dict[str, tuple[str, ...]] = {
    "override_paraphrase": ("guidance", "instruction", "direction", "directive", "guideline", "rule", "order", "command",
                            "programming", "constraint", "restriction", "polic", "prompt", "training", "told", "given",
                            "shown", "provided", "taught", "earlier", "before", "previously", "above", "far", "now"),
    "override_declared_void": ("void", "null", "cancel", "revoked", "obsolete", "outdated", "superseded", "overridden",
                               "invalid", "lifted", "suspended", "withdrawn", "rescinded", "deprecated", "disabled",
                               "longer"),
    "no_rules_now": ("no", "free", "bound", "released", "exempt"),
    "exfil_loot_to_target": ("@", "http", "webhook", "server", "endpoint", "url", "address", "mail", "inbox", "host",
                             "account"),
    "exfil_copy_every": ("@", "http", "webhook", "server", "endpoint", "url", "address", "mail", "inbox", "host",
                         "account"),
}
