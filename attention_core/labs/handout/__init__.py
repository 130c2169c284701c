"""A handout: any page's view as a printable document (its formulas, its numbers, its sentences of why).

    document   Handout, Section, Table: a Step as a section, a head's slice of a 3-D step, values rounded, a large
               matrix cut with a note saying what was left out
    pages      PAGES: each page's title and the Steps it shows, in its order, read from the page's own Trace
    build      make_handout(page, config, controls): the document; settings_in_words
    html       to_html: the handout as one self-contained HTML file (the formulas as LaTeX source); table_html: a
               section's numbers as a tinted HTML table (the page draws the same)

No Streamlit: the Handout page (app_pages/62_handout.py) draws it and prints it.
"""
from .build import make_handout, settings_in_words
from .html import shade, table_html, to_html
from .document import (DIGITS, MAX_COLS, MAX_ROWS, Handout, Section, Table, note_sentence, number_text, section_of,
                       table_of)
from .pages import PAGES

__all__ = ["make_handout", "settings_in_words", "Handout", "Section", "Table", "section_of", "table_of", "PAGES",
           "to_html", "table_html", "shade", "number_text", "note_sentence",
           "DIGITS", "MAX_ROWS", "MAX_COLS"]
