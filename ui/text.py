"""Showing user-derived text safely in Markdown: every Markdown/HTML special character escaped."""
import re

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~&])")


def md_escape(text: str) -> str:
    """'a*b <i>' -> 'a\\*b \\<i\\>': the text is shown as typed, never rendered as markup."""
    return _SPECIAL.sub(r"\\\1", str(text))
