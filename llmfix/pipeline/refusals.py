"""A refusal written as plain text: "I'm sorry, but I can't help with that."

An API says so when it filters an answer (:mod:`llmfix.pipeline.stops`); a model that declines
in words gives no such sign, and its answer used to be reported as ``unparseable`` — a
parse failure, counted with broken JSON. :func:`text_refusal` recognises the refusal, so
that the answer is ``refused`` as an API refusal is.

It is meant to be right when it speaks, not to catch every refusal: the pipeline asks only
about an answer in which no JSON value was found, and the answer must *open* with the
refusal — an optional apology or "as an AI model" preamble, then "I can't / cannot / am
unable to / won't be able to …" followed by a verb of helping or doing ("help", "assist",
"provide", "comply", "fulfil" …), or "I must decline". Prose that merely says sorry, or
"can't" about something else ("I can't help but notice", "I cannot find the file"), or
quotes a refusal, is not one. A few other languages' common forms are known too (French,
German, Spanish, Chinese). Answers longer than :data:`LONGEST` characters are not read:
a refusal is short, and the check stays cheap.
"""

from __future__ import annotations

import re

from llmfix.pipeline.normalize import normalize_document

# The longest answer read as a possible refusal (reasoning blocks left out), in characters.
LONGEST = 1200

# Apologies and "what I am" openings that may come before the refusal itself.
_PREAMBLE = (
    r"(?:"
    r"(?:i'm|i am|im) (?:so |very |really |truly |terribly |deeply )?sorry"
    r"(?: (?:for|about) (?:the|any) (?:confusion|inconvenience|misunderstanding))?"
    r"|sorry|(?:my )?apologies|i apologi[sz]e(?: for any (?:confusion|inconvenience))?"
    r"|unfortunately|regrettably|(?:i'm|i am) afraid"
    r"|as an? (?:ai|artificial intelligence|(?:ai |large )?language model|ai assistant"
    r"|assistant|responsible ai)(?: (?:model|assistant))?"
    r"(?: (?:developed|created|made|trained) by [\w.-]+)?"
    r"|(?:i'm|i am) (?:just |only )?(?:an? )?(?:ai|(?:large )?language model|text-based ai"
    r"|ai (?:language model|assistant)|assistant)"
    r")"
)
# What joins a preamble to what follows: punctuation, or "but", "however", "and", "so".
_JOIN = r"[\s,.!;:\u2014\u2013-]*(?:(?:but|however|and|so)\b[\s,]*)?"
# "I can't" and its kin (the "I" may be left out after a preamble: "..., so can't help").
_CANNOT = (
    r"(?:i |i(?='))?(?:really |simply |just |unfortunately |currently )?"
    r"(?:can't|cant|cannot|can not|(?:am|'m) unable to|(?:am|'m) not able to"
    r"|won't be able to|will not be able to|won't|will not"
    r"|(?:am|'m) not (?:going|allowed|permitted) to|(?:am|'m) not in a position to"
    r"|(?:do not|don't) have the (?:ability|capacity|capability) to)"
    r"(?: (?:in good conscience|currently|fully|directly|really))?"
)
# What a refusal declines to do. Not "help but" ("I can't help but notice").
_VERB = (
    r" (?:help(?! but\b)|assist|provide|comply|fulfil|fulfill|create|generate|write|produce"
    r"|answer|complete|support|share|engage|continue|process|offer|participate"
    r"|accommodate|perform|carry out|honou?r|grant|respond|discuss|do (?:that|this|so|it)"
    r"|be of (?:help|assistance)|go along|proceed|facilitate|disclose|reveal|comment)\b"
)
_DECLINE = (
    r"(?:i |i(?='))?(?:must|have to|need to|'ll have to|will have to) (?:respectfully )?"
    r"(?:decline|refuse)"
)
_NOT_MINE = (
    r"(?:that|this|it)(?:'s| is) (?:not something i(?:'m| am)? (?:can|able to|will|willing to)"
    r" (?:help|assist)|beyond (?:my|what i can)|outside (?:of )?(?:my|what i can))"
)
_UNCOMFORTABLE = (
    r"(?:i |i(?='))?(?:(?:do not|don't) feel|(?:am|'m) not) comfortable"
    r" (?:\w+ing\b|with (?:this|that))"
)
_ENGLISH = re.compile(
    rf"(?:{_PREAMBLE}{_JOIN}){{0,3}}"
    rf"(?:{_CANNOT}{_VERB}|{_DECLINE}|{_NOT_MINE}|{_UNCOMFORTABLE})",
    re.IGNORECASE,
)
_OTHER_LANGUAGES = re.compile(
    r"(?:(?:je suis )?d[ée]sol[ée]e?s?[\s,.!]*(?:mais )?)?je ne (?:peux|pourrai|suis pas en "
    r"mesure de) pas (?:vous |t')?(?:aider|répondre|fournir|faire|accéder à (?:cette|votre)"
    r" demande)"
    r"|(?:(?:es tut mir leid|entschuldigung|leider)[\s,.!]*(?:aber )?)?ich kann (?:ihnen |dir )?"
    r"(?:dabei |hierbei |damit |bei (?:dieser|der) anfrage )?nicht (?:helfen|behilflich sein"
    r"|weiterhelfen|nachkommen)"
    r"|(?:lo siento[\s,.!]*(?:pero )?)?no puedo (?:ayudarte|ayudarle|ayudar|proporcionar|cumplir"
    r"|hacer eso|responder)"
    r"|(?:(?:很)?抱歉|对不起)[，,。！!\s]*(?:但)?我(?:无法|不能)(?:帮助|协助|提供|回答|完成|满足)"
    r"|我(?:无法|不能)(?:帮助|协助|提供|回答|完成|满足)(?:你|您)?",
    re.IGNORECASE,
)

# Text around the words that says nothing: markdown emphasis and quotes, curly apostrophes.
_DECORATION = re.compile(r"[*_#>`\"\u201c\u201d]+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_SPACE = re.compile(r"\s+")


def text_refusal(text: str) -> str | None:
    """The refusal ``text`` opens with (whitespace collapsed), or ``None`` when it does not
    read as one. ``text`` is a whole answer in which no JSON value was found."""
    if len(text) > LONGEST * 4:  # not a refusal, however much of it is markup
        return None
    words = _plain(text)
    if not words or len(words) > LONGEST:
        return None
    if _ENGLISH.match(words) is None and _OTHER_LANGUAGES.match(words) is None:
        return None
    return words


def _plain(text: str) -> str:
    """The answer's words: reasoning blocks left out, markup and quotes removed."""
    if "<" in text:
        document = normalize_document(text)
        for block in reversed(document.reasoning):
            text = text[: block.start] + " " + text[block.end :]
    text = _DECORATION.sub("", text.translate(_APOSTROPHES))
    return _SPACE.sub(" ", text).strip(" '")
