"""Showing user-derived text safely in Markdown: every Markdown/HTML special character escaped, and the colon
and slash of Streamlit's directives (:red[…], :smile:, :material/home:, whose icon only an escaped slash stops),
so none of them runs."""
import re

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~&:/])")


def md_escape(text: str) -> str:
    """'a*b <i> :red[x]' -> 'a\\*b \\<i\\> \\:red\\[x\\]': the text is shown as typed, never rendered as markup."""
    return _SPECIAL.sub(r"\\\1", str(text))
