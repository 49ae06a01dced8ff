"""Monotone LCDM coefficients (an option): mastering one more measured attribute never lowers an
item's logit. A map from unconstrained values, its log-Jacobian and its inverse.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models.lcdm_design import Design


def check_monotone_design(design: Design, where: str = "Q-matrix") -> None:
    """Monotone coefficients are parameterised for items measuring one or two attributes.

    Parameters
    ----------
    design : Design
        The design of the Q-matrix.
    where : str
        Prefix of the error message.

    Raises
    ------
    ValueError
        If an item measures more than two attributes.
    """
    wide = np.flatnonzero(design.order.max(1) > 2)
    if wide.size:
        raise ValueError(
            f"{where}: item {int(wide[0]) + 1} measures {int(design.order[wide[0]].max())} attributes; "
            f"monotonicity constraints support items measuring at most 2"
        )


def monotone_beta(u, order):
    """(beta, log|d beta / d u|) from unconstrained ``u`` (..., J, K) such that every item is
    monotone: main effects ``softplus(u)`` >= 0 and, for an item measuring two attributes, the
    interaction ``-min(main effects) + softplus(u)``, so the both-mastered profile is at least
    as likely to answer correctly as either one-attribute profile. ``order`` (J, K) is
    ``Design.order`` (0 intercept, 1 main effect, 2 interaction, -1 padding; a two-attribute
    item's features are intercept, a, b, a:b). The map is triangular, so the log-Jacobian is
    the sum of log sigmoid(u) over the constrained coefficients.

    The prior N(0, sigma^2 I) restricted to this cone has a normalising constant that does not
    depend on sigma^2 (the cone's Gaussian mass is scale-free), so densities may omit it.

    Parameters
    ----------
    u : array (..., J, K)
        Unconstrained values.
    order : array (J, K)
        ``Design.order``.

    Returns
    -------
    tuple of jax.Array
        ``beta`` (..., J, K) and the log-Jacobian, summed over items, (...).
    """
    sp = jax.nn.softplus(u)
    beta = jnp.where(order == 0, u, jnp.where(order == 1, sp, 0.0))
    if u.shape[-1] > 3:
        two = order[..., 3] == 2
        inter = -jnp.minimum(sp[..., 1], sp[..., 2]) + sp[..., 3]
        beta = beta.at[..., 3].set(jnp.where(two, inter, beta[..., 3]))
    return beta, monotone_item_log_jac(u, order).sum(-1)


def monotone_item_log_jac(u, order):
    """(..., J): each item's log|d beta_j / d u_j| under ``monotone_beta`` (the map is
    item by item, so these add up to its log-Jacobian).

    Parameters
    ----------
    u : array (..., J, K)
        Unconstrained values.
    order : array (J, K)
        ``Design.order``.

    Returns
    -------
    jax.Array
        Shape (..., J).
    """
    return jnp.sum(jnp.where(order >= 1, jax.nn.log_sigmoid(u), 0.0), -1)


def monotone_u(beta, order, floor: float = 1e-6):
    """The inverse of ``monotone_beta``: unconstrained ``u`` (..., J, K) of monotone coefficients
    ``beta``. Coefficients on (or, by rounding, past) the boundary are first moved ``floor``
    inside it, where softplus is invertible (numpy, for starting values).

    Parameters
    ----------
    beta : array-like (..., J, K)
        Monotone coefficients.
    order : array (J, K)
        ``Design.order``.
    floor : float
        Smallest main effect (and interaction plus the smaller main effect) before inversion.

    Returns
    -------
    np.ndarray
        ``u``, shape (..., J, K), float64.
    """
    beta = np.asarray(beta, np.float64)
    order = np.asarray(order)

    def softplus_inv(x):  # log(expm1(x)), stable for large x
        x = np.maximum(x, floor)
        return x + np.log(-np.expm1(-x))

    main = np.where(order == 1, np.maximum(beta, floor), 0.0)
    u = np.where(order == 0, beta, np.where(order == 1, softplus_inv(main), 0.0))
    if beta.shape[-1] > 3:
        two = order[..., 3] == 2
        u[..., 3] = np.where(two, softplus_inv(beta[..., 3] + np.minimum(main[..., 1], main[..., 2])), u[..., 3])
    return u
