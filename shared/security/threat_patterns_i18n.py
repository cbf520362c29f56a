"""Threat patterns in French, German, Spanish, Italian and Portuguese.

They run on normalised text, which has its accents stripped ("précédentes" → "precedentes", "ß" → "ss",
"ñ" → "n"), so they are written without accents. Same conventions as `threat_patterns`. Each language
covers the families that matter most for memory: instruction override, role hijack, system prompt
reveal, exfiltration of secrets or memory to an address, and hiding things from the user.
"""

from __future__ import annotations

FILL = r"(?:\w+\W+){0,8}?"
FEW = r"(?:\w+\W+){0,3}?"
EMAIL = r"[^\s@]{1,64}@[\w-]{1,63}\.[\w.-]{1,253}"
TARGET = (rf"(?:{EMAIL}|\S*https?://|\S*webhook|(?:mon|ma|notre|ce|cette|une?|meinen|meine|unseren|unsere|einen|eine"
          r"|diesen|diese|mi|nuestro|nuestra|este|esta|il\W+mio|la\W+mia|mio|mia|nostro|questo|questa|meu|minha|nosso"
          r"|nossa|um|uma)\W+(?:serveur|adresse|server|servidor|direccion|correo|indirizzo|endereco|webhook|url"
          r"|endpoint|e-?mail))")

INSTRUCTION_OVERRIDE = "instruction_override"
ROLE_HIJACK = "role_hijack"
HIDE_FROM_USER = "hide_from_user"
PROMPT_EXFILTRATION = "system_prompt_exfiltration"
EXFILTRATION = "exfiltration"

_FR_OBJ = r"(?:instructions?|consignes?|directives?|regles|ordres|indications|prompt|programmation)"
_DE_OBJ = (r"(?:anweisungen|anweisung|instruktionen|befehle|regeln|vorgaben|richtlinien|anordnungen|prompts?"
           r"|systemprompt|programmierung)")
_ES_OBJ = r"(?:instrucciones|indicaciones|directrices|directivas|reglas|normas|ordenes|pautas|prompt|programacion)"
_IT_OBJ = r"(?:istruzioni|indicazioni|direttive|regole|linee\W+guida|ordini|prompt|programmazione)"
_PT_OBJ = r"(?:instrucoes|instrucao|orientacoes|diretrizes|diretivas|regras|ordens|comandos|prompt|programacao)"

SOURCES: tuple[tuple[str, str, str, str], ...] = (
    # -- French
    ("fr_override", INSTRUCTION_OVERRIDE, "ignore ignorer ignorez oublie oublier oubliez ne fais faites mets mettez "
     "laisse abandonne abandonnez",
     rf"(?:ignore[rz]?|oublie[rz]?|ne\W+(?:tiens|tenez)\W+(?:plus\W+)?pas\W+compte\W+(?:de|des|du)|(?:fais|faites)\W+"
     rf"abstraction\W+(?:de|des|du)|(?:mets|mettez)\W+de\W+cote|laisse\W+tomber|abandonne[rz]?)\W+{FILL}"
     rf"(?:(?:tes|vos|toutes|tous)\W+{FEW}{_FR_OBJ}\b|{_FR_OBJ}\W+{FEW}(?:precedent(?:e|es|s)?|anterieur(?:e|es|s)?"
     rf"|ci\W*dessus|d\W*avant|initia(?:le|les|ux|l)|origina(?:le|les|ux|l)|(?:du\W+)?systeme|recues?"
     rf"|qu\W*on\W+t\W*a\W+donne))"),
    ("fr_role", ROLE_HIJACK, "tu a fais agis mode",
     r"tu\W+es\W+(?:desormais|maintenant|a\W+present)\W+(?:un|une|le|la|dan|libre|sans)\b|a\W+partir\W+de\W+maintenant"
     r"\W+tu\W+(?:es|dois|vas|obeis|ignores)\b|fais\W+semblant\W+d\W*etre\b|agis\W+comme\W+(?:si\W+tu\W+etais\W+)?"
     r"(?:une?\W+)?(?:ia\W+)?(?:sans\W+(?:limites|restrictions|filtres?)|non\W+censuree?|libre)\b"
     r"|mode\W+(?:developpeur|dan|sans\W+restrictions?)\b"),
    ("fr_reveal", PROMPT_EXFILTRATION, "revele reveler revelez montre montrer montrez affiche afficher affichez "
     "divulgue divulguer divulguez donne donner donnez repete repeter repetez imprime ecris",
     rf"(?:revele[rz]?|montre[rz]?|affiche[rz]?|divulgue[rz]?|donne[rz]?|repete[rz]?|imprime[rz]?|ecris)\W+{FEW}"
     rf"(?:prompt\W+(?:systeme|initial|cache)|(?:instructions|consignes)\W+(?:systeme|initiales|cachees|secretes"
     rf"|d\W*origine)|message\W+systeme)\b"),
    ("fr_exfil", EXFILTRATION, "envoie envoyer envoyez transmets transmettez transmettre transfere transferer "
     "transferez fais faites copie copier copiez partage partager partagez publie poste expedie",
     rf"(?:envoie[rz]?|envoyer|transmets|transmettez|transmettre|transfere[rz]?|(?:fais|faites)\W+suivre|copie[rz]?"
     rf"|partage[rz]?|publie[rz]?|poste[rz]?|expedie[rz]?)\W+{FILL}(?:mots\W+de\W+passe|identifiants|secrets?"
     rf"|cles?(?:\W+(?:api|ssh|privees?))?|jetons?|tokens?|historique|conversations?|messages|memoire|notes|donnees"
     rf"|fichiers|tout)\W+{FILL}(?:a|au|aux|vers|sur|par\W+(?:e\W*mail|courriel)\W+a)\W+{TARGET}"),
    ("fr_hide", HIDE_FROM_USER, "ne sans cache cacher cachez",
     r"ne\W+(?:le\W+|lui\W+|leur\W+|en\W+)?(?:dis|dites|mentionne|mentionnez|previens|prevenez|informe|informez"
     r"|revele|signale)\W+(?:\w+\W+){0,3}?(?:pas|jamais|rien)\W+(?:\w+\W+){0,3}?(?:a\W+)?l\W*utilisat(?:eur|rice)"
     r"|sans\W+(?:le\W+)?(?:dire|prevenir|informer|avertir)\W+(?:a\W+)?l\W*utilisat(?:eur|rice)"
     r"|cache[rz]?\W+(?:ceci|cela|ca|le|la|les|tout)\W+(?:\w+\W+){0,3}?a\W+l\W*utilisat(?:eur|rice)"),
    # -- German
    ("de_override", INSTRUCTION_OVERRIDE, "ignoriere ignorier ignorieren vergiss vergessen missachte missachten "
     "beachte setze verwirf verwerfe alle vorherigen vorigen bisherigen fruheren obigen deine ursprunglichen",
     rf"(?:ignoriere|ignorier|ignorieren\W+sie|vergiss|vergessen\W+sie|missachte|missachten\W+sie|beachte\W+{FEW}"
     rf"nicht|setze\W+{FEW}ausser\W+kraft|verwirf|verwerfe)\W+{FILL}(?:vorherigen|vorigen|bisherigen|fruheren|obigen"
     rf"|ursprunglichen|deine[nmrs]?|ihre[nmrs]?|alle|samtliche|system)\W*{FEW}{_DE_OBJ}\b"
     rf"|(?:alle\W+)?(?:vorherigen|vorigen|bisherigen|fruheren|obigen|deine[nmrs]?|ursprunglichen)\W+{_DE_OBJ}\W+"
     rf"{FEW}(?:ignorieren|vergessen|missachten|verwerfen|gelten\W+nicht\W+mehr|sind\W+(?:ungultig|aufgehoben"
     rf"|hinfallig|nichtig))\b"),
    ("de_role", ROLE_HIJACK, "du ab tu entwicklermodus dan",
     r"du\W+bist\W+(?:jetzt|nun|ab\W+sofort|ab\W+jetzt)\W+(?:ein|eine|der|die|dan|frei|uneingeschrankt|kein|keine)\b"
     r"|ab\W+(?:sofort|jetzt)\W+(?:bist|handelst|antwortest|gehorchst)\W+du\b|tu\W+so\W*,?\W*als\W+(?:ob|warst"
     r"|waerst|seist)\b|entwicklermodus\b|dan\W*modus\b"),
    ("de_reveal", PROMPT_EXFILTRATION, "zeig zeige verrat verrate gib nenne wiederhole drucke schreib schreibe "
     "offenbare enthulle",
     rf"(?:zeig|zeige|verrat|verrate|gib|nenne|wiederhole|drucke|schreib|schreibe|offenbare|enthulle)\W+{FEW}"
     rf"(?:(?:deinen|deine|dein|ihren|ihre)\W+(?:\w+\W+){{0,2}}?(?:systemprompt|system\W*prompt|systemanweisungen"
     rf"|systemnachricht|anweisungen|instruktionen|vorgaben)|(?:den|die)\W+(?:\w+\W+){{0,2}}?(?:systemprompt"
     rf"|system\W*prompt|systemanweisungen|systemnachricht))\b"),
    ("de_exfil", EXFILTRATION, "sende senden schicke schick leite ubermittle ubertrage kopiere lade poste maile teile",
     rf"(?:sende|senden\W+sie|schicke?|leite|ubermittle|ubertrage|kopiere|lade|poste|maile|teile)\W+{FILL}"
     rf"(?:passworter|passwort|kennworter|kennwort|zugangsdaten|anmeldedaten|geheimnisse|schlussel|api\W*schlussel"
     rf"|tokens?|verlauf|chatverlauf|gesprache|gesprach|unterhaltungen|nachrichten|erinnerungen|speicher|notizen"
     rf"|daten|dateien|alles)\W+{FILL}(?:an|zu|nach|auf)\W+{TARGET}"),
    ("de_hide", HIDE_FROM_USER, "sag sage erzahl erzahle verrate verheimliche verberge verschweige ohne",
     r"(?:sag|sage|erzahl|erzahle|verrate)\W+(?:\w+\W+){0,3}?(?:dem|der)\W+(?:benutzer|nutzer|anwender)(?:in)?\W+"
     r"(?:\w+\W+){0,3}?nichts\b|(?:verheimliche|verberge|verschweige)\W+(?:\w+\W+){0,3}?(?:vor\W+)?(?:dem|der)\W+"
     r"(?:benutzer|nutzer|anwender)|ohne\W+(?:es\W+)?(?:dem|der)\W+(?:benutzer|nutzer|anwender)(?:in)?\W+"
     r"(?:zu\W+sagen|mitzuteilen|zu\W+informieren|bescheid\W+zu\W+geben)"),
    # -- Spanish
    ("es_override", INSTRUCTION_OVERRIDE, "ignora ignore ignorar olvida olvide olvidar descarta descarte omite omita "
     "haz no",
     rf"(?:ignora|ignore|ignorar|olvida|olvide|olvidar|descarta|descarte|omite|omita|haz\W+caso\W+omiso\W+(?:de|a)"
     rf"|no\W+(?:sigas|obedezcas|hagas\W+caso\W+(?:de|a)))\W+{FILL}(?:(?:tus|sus|todas)\W+{FEW}{_ES_OBJ}\b|{_ES_OBJ}"
     rf"\W+{FEW}(?:anteriores|previas|previos|iniciales|originales|de\W+arriba|del\W+sistema|que\W+(?:te|le)\W+"
     rf"(?:dieron|han\W+dado|di)))"),
    ("es_role", ROLE_HIJACK, "ahora a desde eres finge modo",
     r"(?:ahora|a\W+partir\W+de\W+ahora|desde\W+ahora)\W+(?:eres|seras|actuas|actua)\W+(?:como\W+)?(?:un|una|el|la"
     r"|dan|libre|sin)\b|eres\W+ahora\W+(?:un|una|el|la|dan|libre)\b|finge\W+(?:que\W+)?(?:eres|ser)\b"
     r"|modo\W+(?:desarrollador|dan|sin\W+restricciones)\b"),
    ("es_reveal", PROMPT_EXFILTRATION, "revela revele muestra muestrame muestre ensena ensename imprime repite dime "
     "dame divulga",
     rf"(?:revela|revele|muestra|muestrame|muestre|ensena|ensename|imprime|repite|dime|dame|divulga)\W+{FEW}"
     rf"(?:prompt\W+(?:del\W+sistema|de\W+sistema|inicial|oculto)|instrucciones\W+(?:del\W+sistema|de\W+sistema"
     rf"|iniciales|ocultas|secretas|originales)|mensaje\W+del\W+sistema)\b"),
    ("es_exfil", EXFILTRATION, "envia envie enviar manda mande reenvia reenvie transmite copia comparte sube publica",
     rf"(?:envia|envie|enviar|manda|mande|reenvia|reenvie|transmite|copia|comparte|sube|publica)\W+{FILL}"
     rf"(?:contrasenas|contrasena|claves?|credenciales|secretos?|tokens?|historial|conversacion(?:es)?|mensajes"
     rf"|memoria|notas|datos|archivos|todo)\W+{FILL}(?:a|al|hacia|por\W+correo\W+a)\W+{TARGET}"),
    ("es_hide", HIDE_FROM_USER, "no sin oculta ocultalo ocultar",
     r"no\W+(?:le\W+|se\W+lo\W+|lo\W+)?(?:digas|diga|menciones|cuentes|informes|avises)\W+(?:\w+\W+){0,4}?(?:al|a\W+la)"
     r"\W+usuari[oa]|sin\W+(?:decirle|avisar(?:le)?|informar(?:le)?|decir)\W+(?:nada\W+)?(?:al|a\W+la)\W+usuari[oa]"
     r"|oculta(?:lo|r)?\W+(?:\w+\W+){0,3}?(?:al|a\W+la)\W+usuari[oa]"),
    # -- Italian
    ("it_override", INSTRUCTION_OVERRIDE, "ignora ignorate ignorare dimentica dimenticate trascura tralascia non",
     rf"(?:ignora|ignorate|ignorare|dimentica|dimenticate|trascura|tralascia|non\W+seguire|non\W+obbedire\W+a)\W+"
     rf"{FILL}(?:(?:le\W+tue|tutte\W+le|le\W+sue)\W+{FEW}{_IT_OBJ}\b|{_IT_OBJ}\W+{FEW}(?:precedenti|iniziali"
     rf"|originali|di\W+sistema|del\W+sistema|sopra|ricevute|che\W+ti\W+(?:hanno|ho)\W+dato))"),
    ("it_role", ROLE_HIJACK, "ora adesso da d fingi modalita",
     r"(?:ora|adesso|da\W+ora\W+in\W+poi|d\W*ora\W+in\W+poi)\W+(?:sei|sarai)\W+(?:un|una|il|la|dan|libero|libera"
     r"|senza)\b|fingi\W+di\W+essere\b|modalita\W+(?:sviluppatore|dan|senza\W+restrizioni)\b"),
    ("it_reveal", PROMPT_EXFILTRATION, "rivela mostra mostrami stampa ripeti dimmi dammi svela",
     rf"(?:rivela|mostra|mostrami|stampa|ripeti|dimmi|dammi|svela)\W+{FEW}(?:prompt\W+(?:di\W+sistema|del\W+sistema"
     rf"|iniziale)|istruzioni\W+(?:di\W+sistema|del\W+sistema|iniziali|nascoste|segrete))\b"),
    ("it_exfil", EXFILTRATION, "invia inviare manda mandare inoltra inoltrare trasmetti copia condividi carica",
     rf"(?:invia|inviare|manda|mandare|inoltra|inoltrare|trasmetti|copia|condividi|carica)\W+{FILL}(?:password"
     rf"|credenziali|segreti|chiavi|token|cronologia|conversazioni?|messaggi|memoria|note|dati|file|tutto)\W+{FILL}"
     rf"(?:a|al|all|alla|verso|su)\W+{TARGET}"),
    ("it_hide", HIDE_FROM_USER, "non senza nascondi",
     r"non\W+(?:dire|dirlo|dirglielo|informare|avvisare|menzionare)\W+(?:\w+\W+){0,3}?(?:all|a|l)\W*utente"
     r"|senza\W+(?:dirlo|avvisare|informare)\W+(?:l|all)\W*utente|nascondi\W+(?:\w+\W+){0,3}?(?:all|a)\W*utente"),
    # -- Portuguese
    ("pt_override", INSTRUCTION_OVERRIDE, "ignore ignora ignorar esqueca esquece esquecer desconsidere desconsidera "
     "descarte nao",
     rf"(?:ignore|ignora|ignorar|esqueca|esquece|esquecer|desconsidere|desconsidera|descarte|nao\W+(?:siga|obedeca))"
     rf"\W+{FILL}(?:(?:suas|tuas|todas)\W+{FEW}{_PT_OBJ}\b|{_PT_OBJ}\W+{FEW}(?:anteriores|previas|iniciais"
     rf"|originais|acima|do\W+sistema|que\W+(?:voce\W+)?recebeu))"),
    ("pt_role", ROLE_HIJACK, "agora a de voce tu finja modo",
     r"(?:agora|a\W+partir\W+de\W+agora|de\W+agora\W+em\W+diante)\W+(?:voce|tu)\W+(?:e|es|sera|passa\W+a\W+ser)\W+"
     r"(?:um|uma|o|a|dan|livre|sem)\b|(?:voce|tu)\W+(?:e|es)\W+agora\W+(?:um|uma|o|a|dan|livre|sem)\b"
     r"|finja\W+(?:que\W+)?(?:e|ser|voce\W+e)\b|modo\W+(?:desenvolvedor|dan|sem\W+restricoes)\b"),
    ("pt_reveal", PROMPT_EXFILTRATION, "revele revela mostre mostra imprima repita diga me divulgue",
     rf"(?:revele|revela|mostre|mostra|imprima|repita|diga|me\W+de|divulgue)\W+{FEW}(?:prompt\W+(?:do\W+sistema"
     rf"|de\W+sistema|inicial)|instrucoes\W+(?:do\W+sistema|de\W+sistema|iniciais|ocultas|secretas))\b"),
    ("pt_exfil", EXFILTRATION, "envie envia enviar mande manda encaminhe encaminha transmita copie compartilhe "
     "publique carregue",
     rf"(?:envie|envia|enviar|mande|manda|encaminhe|encaminha|transmita|copie|compartilhe|publique|carregue)\W+"
     rf"{FILL}(?:senhas?|credenciais|segredos?|chaves?|tokens?|historico|conversas?|mensagens|memoria|notas|dados"
     rf"|arquivos|tudo)\W+{FILL}(?:a|ao|para|pro|pra)\W+{TARGET}"),
    ("pt_hide", HIDE_FROM_USER, "nao sem esconda",
     r"nao\W+(?:conte|diga|mencione|informe|avise)\W+(?:\w+\W+){0,3}?(?:ao|a|para\W+o|pro)\W+usuari[oa]"
     r"|sem\W+(?:contar|avisar|informar|dizer)\W+(?:nada\W+)?(?:ao|a|para\W+o)\W+usuari[oa]"
     r"|esconda\W+(?:\w+\W+){0,3}?(?:do|da)\W+usuari[oa]"),
)

REQUIRES: dict[str, tuple[str, ...]] = {
    "fr_exfil": ("@", "http", "webhook", "serveur", "adresse", "url", "endpoint", "mail"),
    "de_exfil": ("@", "http", "webhook", "server", "adresse", "url", "endpoint", "mail"),
    "es_exfil": ("@", "http", "webhook", "servidor", "direccion", "correo", "url", "endpoint", "mail"),
    "it_exfil": ("@", "http", "webhook", "server", "indirizzo", "url", "endpoint", "mail"),
    "pt_exfil": ("@", "http", "webhook", "servidor", "endereco", "url", "endpoint", "mail"),
    "fr_hide": ("utilisat",),
    "de_hide": ("benutzer", "nutzer", "anwender"),
    "es_hide": ("usuari",),
    "it_hide": ("utente",),
    "pt_hide": ("usuari",),
}
