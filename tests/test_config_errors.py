"""Every ConfigError path says what to change."""
import pytest

from attention_core import Config, ConfigError, parse_vectors, run_forward

CASES = [
    (dict(sentence=""), "empty"),
    (dict(sentence="   \n\t "), "empty"),
    (dict(sentence="x" * 10_000), "10,000 characters; the limit is 1,000"),
    (dict(embedding="word2vec"), "embedding='word2vec' is not one of"),
    (dict(unknown="guess"), "unknown='guess'"),
    (dict(positional="rotary"), "positional='rotary'"),
    (dict(combine="multiply"), "combine="),
    (dict(score="cosine"), "score='cosine'"),
    (dict(mask="random"), "mask='random'"),
    (dict(weights="pretrained"), "weights='pretrained' is not one of 'trained' or 'random'"),
    (dict(d_model=0), "d_model=0 is out of range; use 1 to 512"),
    (dict(d_model=1, embedding="random"), "d_model=1 leaves one number per word"),
    (dict(d_model=100_000), "d_model=100,000 is out of range"),
    (dict(d_k=0), "d_k=0 is out of range"),
    (dict(d_v=513), "d_v=513 is out of range"),
    (dict(d_k=2.5), "d_k must be a whole number"),
    (dict(n_heads=0), "n_heads=0 is out of range; use 1 to 16"),
    (dict(n_heads=17), "n_heads=17 is out of range"),
    (dict(n_heads=16, d_k=64), "n_heads × d_k"),
    (dict(temperature=0.0), "temperature=0 is out of range"),
    (dict(temperature=float("nan")), "temperature must be a finite number"),
    (dict(pe_base=1.0), "pe_base=1 is out of range"),
    (dict(seed=-1), "seed=-1 is out of range"),
    (dict(glove_vocab=10), "glove_vocab=10 is out of range"),
    (dict(padding=(-1,)), "padding must be a list of token positions"),
    (dict(bias="yes"), "bias must be true or false"),
    (dict(embedding="upload"), "Choose a vectors file"),
]


@pytest.mark.parametrize("kwargs,message", CASES)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=None) as err:
        Config(**kwargs)
    assert message in str(err.value)


RUN_CASES = [
    (dict(sentence="zebras giraffes"), "None of the words (zebras, giraffes) is in the vocabulary"),
    (dict(embedding="toy"), "Trained weights need GloVe or random embeddings, or set the weights to seeded random: "
                            "the toy vectors know 20 words"),
    (dict(sentence="🙂🙂 !!"), "The sentence has no words (only 🙂🙂!!)"),
    (dict(mask="padding", padding=(9,)), "Padding position 9 is past the last token (positions run 0 to 3)"),
    (dict(embedding="random", sentence=" ".join(["w"] * 129)), "129 tokens; the limit is 128"),
]


@pytest.mark.parametrize("kwargs,message", RUN_CASES)
def test_run_errors(kwargs, message):
    with pytest.raises(ConfigError) as err:
        run_forward(Config(**kwargs))
    assert message in str(err.value)


@pytest.mark.parametrize("kwargs", [dict(embedding="random", d_model=10, n_heads=4, weights="random"),
                                    dict(embedding="toy", weights="random", n_heads=2),
                                    dict(embedding="toy", weights="random", positional="index", n_heads=3),
                                    dict(n_heads=3)])
def test_heads_need_not_divide_d_model_in_the_forward_pass(kwargs):
    """W_q is (d_model, H·d_k) with d_k its own setting: only torch's layer needs d_model % h == 0."""
    config = Config(**kwargs)
    t = run_forward(config)
    assert t["w_q"].shape[1] == config.n_heads * config.d_k


def test_torch_layer_says_which_heads_divide_d_model():
    from attention_core import torch_mha
    with pytest.raises(ConfigError) as err:
        torch_mha.mha_module(10, 4)
    assert ("d_model=10 is not divisible by n_heads=4, and PyTorch's multi-head layer splits d_model into equal "
            "heads: set the number of heads to 1, 2, 5 or 10.") in str(err.value)


VECTOR_CASES = [
    ("", "empty"),
    ("cat 0.1 0.2\ndog 0.3\n", "Line 2 ('dog') has 1 numbers; the first line had 2"),
    ("cat 0.1 abc\n", "Line 1 ('cat'): 'abc' is not a number"),
    ("cat\n", "Line 1 ('cat') has a word but no numbers"),
    ("cat 1 nan\n", "infinite or NaN"),
    ("cat 1 2\ncat 2 3\n", "appears twice"),
    ("cat 1\ndog 2\n", "one number"),
    ("x " + " ".join(["1"] * 600), "600 numbers; at most 512"),
    ("a 1 2\n" * 1 + "b " + "1 " * 2_000_000, "larger than 2 MB"),
]


@pytest.mark.parametrize("text,message", VECTOR_CASES)
def test_vector_file_errors(text, message):
    with pytest.raises(ConfigError) as err:
        parse_vectors(text)
    assert message in str(err.value)
