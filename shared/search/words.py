"""English word lists for query parsing: stop words, and irregular verb forms the stemmer cannot join."""

from __future__ import annotations

# Words that carry no topic: dropped from free-text queries so a question's "when did … the …" does
# not decide its ranking. The contraction pieces (s, t, ll, don, …) are what a tokenizer leaves of "don't".
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between
both but by can cannot could did do does doing down during each few for from further had has have having he
her here hers herself him himself his how i if in into is it its itself just let me more most my myself no
nor not of off on once only or other ought our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours yourself yourselves
also anything something may might must shall us get got done kind likely many much sort type types yet
s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn wouldn shouldn couldn mustn shan
""".split())

# base past participle: porter stems "painted" to "paint" but never "went" to "go".
_IRREGULAR = """
arise arose arisen|awake awoke awoken|bear bore borne born|beat beaten|become became|begin began begun|
bend bent|bite bit bitten|bleed bled|blow blew blown|break broke broken|breed bred|bring brought|
build built|burn burnt|buy bought|catch caught|choose chose chosen|cling clung|come came|creep crept|
deal dealt|dig dug|draw drew drawn|dream dreamt|drink drank drunk|drive drove driven|eat ate eaten|
fall fell fallen|feed fed|feel felt|fight fought|find found|flee fled|fly flew flown|forbid forbade forbidden|
forget forgot forgotten|forgive forgave forgiven|freeze froze frozen|give gave given|go went gone|
grow grew grown|hang hung|hear heard|hide hid hidden|hold held|keep kept|kneel knelt|know knew known|
lay laid|lead led|leap leapt|learn learnt|leave left|lend lent|lie lay lain|light lit|lose lost|make made|
mean meant|meet met|pay paid|ride rode ridden|ring rang rung|rise rose risen|run ran|say said|see saw seen|
seek sought|sell sold|send sent|shake shook shaken|shine shone|shoot shot|show showed shown|shrink shrank shrunk|
sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid|speak spoke spoken|speed sped|spend spent|
spin spun|spring sprang sprung|stand stood|steal stole stolen|stick stuck|sting stung|strike struck|
swear swore sworn|sweep swept|swim swam swum|swing swung|take took taken|teach taught|tear tore torn|
tell told|think thought|throw threw thrown|understand understood|wake woke woken|wear wore worn|weep wept|
win won|write wrote written
"""


def _forms() -> dict[str, tuple[str, ...]]:
    table: dict[str, set[str]] = {}
    for group in _IRREGULAR.replace("\n", "").split("|"):
        words = group.split()
        for word in words:
            table.setdefault(word, set()).update(w for w in words if w not in STOP_WORDS or w == word)
    return {word: tuple(sorted(forms)) for word, forms in table.items()}


IRREGULAR_FORMS = _forms()


def word_forms(word: str) -> tuple[str, ...]:
    """The word and its irregular verb forms ("went" -> go, gone, went; "drawing" -> draw, drawing,
    drawn, drew); the word alone otherwise."""
    if word in IRREGULAR_FORMS:
        return IRREGULAR_FORMS[word]
    for base in _bases(word):
        if base in IRREGULAR_FORMS:
            return tuple(sorted({word, *IRREGULAR_FORMS[base]}))
    return (word,)


def _bases(word: str) -> list[str]:
    """Base verbs a regular -ing or -s form may come from ("making" -> mak, make; "running" -> run)."""
    if word.endswith("ing") and len(word) > 5:
        stem = word[:-3]
        return [stem, stem + "e"] + ([stem[:-1]] if stem[-1] == stem[-2] else [])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return [word[:-1], word[:-2]] if word.endswith("es") else [word[:-1]]
    return []
