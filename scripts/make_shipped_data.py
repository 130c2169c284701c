"""Write what the first page load reads instead of computing it:

- data/glove_words_20000.txt: GloVe's 20,000 most frequent words (the default vocabulary), so
  the 400,000-word parquet list is not opened;
- data/trained_default*.npz: W_Q, W_K, W_V trained under the default settings with 1, 2 and 4 heads;
- data/induction_lm*.npz: the small language model trained on the copy task from seed 0 (its weights, its
  step-0 weights and its history, with every head's pattern and the K-composition at each logged step), and the same with the repeat at a fixed offset (needs torch, ≈ 1 min).

    python scripts/make_shipped_data.py

Run it after changing the defaults, the training data or pretrained.LR / EPOCHS (or training/lm's settings).
tests/test_pretrained.py rebuilds both and checks the files match; tests/test_lm_training.py retrains the
language model and checks its weights match.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core.math import embeddings  # noqa: E402
from attention_core import pretrained  # noqa: E402
from attention_core.training.lm import shipped as lm_shipped  # noqa: E402
from attention_core.training.lm.train import drop_step  # noqa: E402
from attention_core.lessons.induction import snapshot

if __name__ == "__main__":
    embeddings.write_word_list()
    print(f"{embeddings.WORD_LIST_PATH}: {embeddings.SHIPPED_WORDS:,} words")
    for h in pretrained.SHIPPED_HEADS:
        t = pretrained.write_shipped(h)
        print(f"{pretrained.shipped_path(h)}: {t.epochs} epochs, train accuracy {t.accuracy:.1%}, "
              f"{', '.join(f'{k} {v.shape}' for k, v in t.params.items())}")
    for run, r in lm_shipped.write_shipped(snapshot).items():
        h = r.history
        print(f"{lm_shipped.path(lm_shipped.FILES[run][0])}: {run}, {r.steps} steps in {r.seconds:.1f} s, copy loss "
              f"{h['copy_loss'][0]:.2f} -> {h['copy_loss'][-1]:.2f}, drop at step {drop_step(h)}")
