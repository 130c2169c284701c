"""SymPy derivations equal the closed forms and the numbers the backward pass uses."""
import numpy as np
import pytest
import torch

from attention_core.symbolic import scaled_dot_gradient, softmax_jacobian


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
