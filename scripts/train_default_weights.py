"""Write data/trained_default.npz: W_Q, W_K, W_V trained under the default settings (attention_core.Config()).

    python scripts/train_default_weights.py

Run it after changing the defaults, the training data or pretrained.LR / EPOCHS; the app then
loads the file instead of training on its first page load. tests/test_pretrained.py retrains
and checks the file matches.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core import pretrained  # noqa: E402

if __name__ == "__main__":
    t = pretrained.write_shipped()
    print(f"{pretrained.SHIPPED_PATH}: {t.epochs} epochs, train accuracy {t.accuracy:.1%}, "
          f"{', '.join(f'{k} {v.shape}' for k, v in t.params.items())}")
