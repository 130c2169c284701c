"""Where the shipped data lives: data/ at the repository's root, beside this package.

    glove_words_20000.txt   the 20,000 most frequent GloVe words (their vectors come from the pinned package)
    sentiment.csv           the labelled sentences the classifier trains on
    trained_default*.npz    the default settings' trained W_Q, W_K, W_V (written by scripts/make_shipped_data.py)
"""
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
