"""The induction-heads page's lesson: what each head of the small language model does on a repeated sequence,
and how a layer-1 head finds the earlier occurrence of the current token (Elhage et al. 2021; Olsson et al. 2022).

    sequence      the material: random tokens, then the same tokens again (and the batch the losses are measured on)
    head_scores   every head's pattern read from the forward Trace; previous-token and induction scores
    composition   K-composition: layer 1's key and score split into the stream's pieces (E, E^pos, each layer-0
                  head, β)
    explainers    the K-composition's numbers, each a sum of its live terms (kind "induction")
    ablation      zero one head's rows of W_O, run the model again, and measure the copy loss
    history       a training run's history: where the plateau and the drop of the loss are, and what a run keeps
                  of every logged step (each head's pattern, the K-composition table)

This package is the page's entry point: ui/ and the tests import every name from here.

May import: the math, the forward pass, the explanations, training, and the other lessons.
"""
from .sequence import BATCH, BATCH_SEED, HALF, SEQUENCE_SEED, chance_scores, copy_positions, repeated_batch, repeated_ids, token_names
from .head_scores import head_table, induction_scores, patterns, prev_token_scores, targets, top_head
from .composition import (CLEAR, KIND, LAYER, earlier, k_composition, offsets, piece_names, shares, singles_out,
                          stream_pieces)
from .ablation import ablated, ablation_table, copy_loss, log_probs
from .history import SNAPSHOT, Phases, at_step, marks, phases, snapshot
from . import explainers  # noqa: F401  (registers the K-composition's explainers)

__all__ = ["BATCH", "BATCH_SEED", "HALF", "SEQUENCE_SEED", "chance_scores", "copy_positions", "repeated_batch", "repeated_ids",
           "token_names", "head_table", "induction_scores", "patterns", "prev_token_scores", "targets", "top_head", "KIND",
           "CLEAR", "LAYER", "earlier", "k_composition", "offsets", "piece_names", "shares", "stream_pieces", "ablated", "ablation_table",
           "copy_loss", "log_probs", "Phases", "phases", "singles_out", "SNAPSHOT", "snapshot", "at_step", "marks"]
