"""The heatmap colours stay distinguishable for colour-blind learners (simulated).

Deuteranopia and protanopia are simulated with Machado, Oliveira & Fernandes (2009), severity 1,
on linear RGB; distances are CIE76 ΔE in L*a*b*. A ΔE above ~10 is clearly visible.
"""
import numpy as np
import pytest

from ui.charts import DIVERGING, SEQUENTIAL

MACHADO = {
    "normal": np.eye(3),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
}


def srgb_to_linear(c):
    c = np.asarray(c, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def hex_rgb(h):
    return np.array([int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def lab(linear_rgb):
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ np.clip(linear_rgb, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(hex_colour, vision):
    return lab(MACHADO[vision] @ srgb_to_linear(hex_rgb(hex_colour)))


@pytest.mark.parametrize("vision", list(MACHADO))
def test_diverging_ends_differ_from_each_other_and_the_middle(vision):
    neg, mid, pos = (seen(c, vision) for c in DIVERGING)
    assert np.linalg.norm(neg - pos) > 40, "negative and positive look alike"
    assert np.linalg.norm(neg - mid) > 40 and np.linalg.norm(pos - mid) > 40, "an end looks like zero"


@pytest.mark.parametrize("vision", list(MACHADO))
def test_sequential_runs_light_to_dark(vision):
    light, dark = (seen(c, vision) for c in SEQUENTIAL)
    assert light[0] - dark[0] > 60      # a lightness ramp reads in any colour vision


def test_a_red_green_scale_would_fail():
    """The check has teeth: red vs green collapses under deuteranopia."""
    red, green = seen("#d62728", "deuteranopia"), seen("#2ca02c", "deuteranopia")
    assert np.linalg.norm(red - green) < 40
