"""The settings many core tests are about: seed 001's toy 3-d vectors with seeded random weights
(the defaults before issue 10 made GloVe and trained weights the default). Tests that check toy
numbers by hand build their Config with toy_config(...), so the pin is explicit."""
from attention_core import Config

TOY = {"embedding": "toy", "weights": "random"}


def toy_config(**changes) -> Config:
    return Config(**{**TOY, **changes})
