"""The special functions of the report path (log Γ, log B, log C(n, k), the incomplete beta function),
pinned to scipy.special, and the t quantile at non-whole degrees of freedom that rests on them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from flaketui.stats.special import betainc, lbeta, lgamma, log_choose


def test_log_gamma_beta_and_choose_match_scipy() -> None:
    """lgamma, lbeta and log_choose equal scipy's gammaln, betaln and log of comb, element by element."""
    a = np.array([0.2, 0.5, 1.0, 3.0, 50.5, 400.0, 1e4])
    b = np.array([0.3, 7.0, 1.0, 2.0, 30.0, 600.0, 0.7])
    np.testing.assert_allclose(lgamma(a), special.gammaln(a), rtol=1e-13)
    np.testing.assert_allclose(lbeta(a, b), special.betaln(a, b), rtol=1e-12, atol=1e-10)  # Γ(1e4) cancels
    n, k = np.array([0, 5, 40, 300]), np.array([0, 2, 17, 150])
    np.testing.assert_allclose(log_choose(n, k), np.log(special.comb(n, k)), rtol=1e-12, atol=1e-12)


def test_betainc_broadcasts_x_and_matches_scipy() -> None:
    """I_x(a, b) over a grid of x and of (a, b) at once equals scipy.special.betainc, 0 and 1 at the ends."""
    a = np.array([0.2, 0.5, 1.0, 3.0, 50.5, 400.0, 0.7])[:, None]
    b = np.array([0.3, 7.0, 1.0, 2.0, 30.0, 600.0, 1200.0])[:, None]
    x = np.array([0.0, 1e-6, 0.001, 0.1, 0.5, 0.9, 0.999, 1.0])[None, :]
    got = betainc(a, b, x)
    assert got.shape == (7, 8)
    np.testing.assert_allclose(got, special.betainc(a, b, x), rtol=1e-9, atol=1e-13)
    assert (got[:, 0] == 0).all() and (got[:, -1] == 1).all()


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.999])
def test_t_quantile_at_real_df_matches_scipy_on_a_grid(confidence: float) -> None:
    """The t quantile at non-whole degrees of freedom, from 0.3 to beyond the series' range, is scipy's."""
    from flaketui.stats.estimators import t_value

    for df in np.r_[np.linspace(0.3, 299.7, 40), 300.5, 1e4 + 0.5]:
        assert t_value(float(df), confidence) == pytest.approx(stats.t.ppf(0.5 + confidence / 2, df), rel=1e-10)
