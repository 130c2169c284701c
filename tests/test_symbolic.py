"""SymPy derivations equal the closed forms and the numbers the backward pass uses."""
import numpy as np
import pytest
import torch

from attention_core.training.symbolic import scaled_dot_gradient, softmax_jacobian


@pytest.mark.parametrize("row", [[0.3, -1.2], [0.3, -1.2, 2.0], [5.0, 5.0, -5.0]])
def test_softmax_jacobian(row):
    d = softmax_jacobian(row)
    assert d.identity_holds
    assert d.max_abs_difference < 1e-14
    expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, 0), torch.tensor(row, dtype=torch.float64))
    np.testing.assert_allclose(d.numeric_from_symbols, expected.numpy(), atol=1e-14)


def test_scaled_dot_gradient_against_autograd():
    q, keys, g = np.array([0.5, -1.0]), np.array([[1.0, 0.2], [-0.3, 0.8]]), np.array([0.7, -0.4])
    d = scaled_dot_gradient(q, keys, g)
    assert d.identity_holds and d.max_abs_difference < 1e-14
    qt = torch.tensor(q, requires_grad=True)
    loss = (torch.tensor(g) * torch.softmax(torch.tensor(keys) @ qt / np.sqrt(2), 0)).sum()
    loss.backward()
    np.testing.assert_allclose(d.numeric_from_symbols, qt.grad.numpy(), atol=1e-14)


def test_sizes_are_checked():
    with pytest.raises(ValueError):
        softmax_jacobian([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError):
        scaled_dot_gradient([1.0, 2.0, 3.0], np.eye(2), [1.0, 1.0])


@pytest.mark.parametrize("m", [2, 3])
def test_symbols_count_from_zero(m):
    """docs/notation.md: every index from 0. The derivations' symbols are s_0 … s_{m−1}, a_0 …, q_0, q_1,
    k_{00} … k_{11}, g_0, g_1, and no line names an index m (which would mean counting from 1)."""
    d = softmax_jacobian([0.5, -0.25, 1.0][:m])
    assert {str(s) for s in d.symbolic.free_symbols} == {f"s_{i}" for i in range(m)}
    text = " ".join(d.latex)
    assert "s_{0}" in text and "a_{0}" in text and f"s_{{{m}}}" not in text and f"a_{{{m}}}" not in text
    assert r"\partial a_0}{\partial s_0}" in text and r"\partial a_0}{\partial s_1}" in text
    g = scaled_dot_gradient([0.5, -1.0], np.eye(2), [1.0, -1.0])
    assert {str(s) for s in g.symbolic.free_symbols} == {"q_0", "q_1", "k_00", "k_01", "k_10", "k_11", "g_0", "g_1"}
    lines = " ".join(g.latex)
    assert "g_0 a_0 + g_1 a_1" in lines and r"\partial q_0}" in lines and "q_{2}" not in lines
    # the derivation's √2 is its own width d = 2, written as such (not a d the page would read as its d_k)
    assert r"\frac{1}{\sqrt{2}} K^\top" in g.latex[-1] and r"\sqrt{d}" not in lines
