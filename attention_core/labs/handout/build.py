"""A handout: a page's title, the sentence and settings in words, then a section for each Step the page shows."""
from __future__ import annotations

from ...forward.config import Config
from ...forward.trace import Trace
from ..export.link import config_to_query
from .document import Handout, section_of
from .pages import PAGES


def settings_in_words(config: Config) -> tuple[str, ...]:
    """The settings that differ from the defaults, one 'name = value' each (the sentence is said apart).

    >>> settings_in_words(Config().replace(n_heads=2, d_k=8))
    ('d_k = 8', 'n_heads = 2')
    """
    default = config_to_query(Config())
    return tuple(f"{k} = {v}" for k, v in config_to_query(config).items() if k != "sentence" and v != default.get(k))


def make_handout(page: str, config: Config, controls: dict | None = None, forward: Trace | None = None) -> Handout:
    """The handout of a page (its URL path: "" for the Overview, "qkv", "rope", ...) under these settings and the
    page's own controls. `forward` is run_forward(config) when the caller has it (the same numbers: same Config,
    same Trace); every other trace is the one the page itself makes from it."""
    if page not in PAGES:
        raise KeyError(f"no handout for the page {page!r}")
    title, entry = PAGES[page]
    if forward is None:
        from ...forward.stages import run_forward
        forward = run_forward(config)
    parts = entry(config, dict(controls or {}), forward)
    sections = tuple(section_of(trace, key, head, name) for trace, key, head, name in parts.items)
    return Handout(page, title, config.sentence, " ".join(forward.tokens), settings_in_words(config),
                   tuple(parts.controls),
                   tuple(list(forward.notices) + parts.notes), sections)
