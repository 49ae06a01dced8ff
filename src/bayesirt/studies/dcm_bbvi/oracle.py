"""The oracle of study ``dcm_bbvi``: the accuracy of the modal profiles at the true coefficients
and profile probabilities, the ceiling any estimator of a data set can be expected to reach."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.inference.dcm import collapsed_vi
from bayesirt.models import lcdm
from bayesirt.studies.dcm_bbvi import data
from bayesirt.studies.dcm_bbvi.tables import accuracy


def modal_accuracy(beta, log_pi, rm, truth, q) -> dict:
    """Accuracy of the modal posterior profiles at coefficients ``beta`` (J, K) and log profile
    probabilities ``log_pi`` (L,) against the true profiles."""
    des = lcdm.design(q)
    y_obs, n_obs = lcdm.observed_counts(rm.responses)
    post = collapsed_vi.profile_posterior(
        np.asarray(beta, np.float32), np.asarray(log_pi, np.float32), np.asarray(des.delta, np.float32), y_obs, n_obs
    )
    return accuracy(np.asarray(post), data.true_profiles(truth), q.shape[1])


def oracle_accuracy(rm, truth, q) -> dict:
    """Accuracy of the modal posterior profile at the true beta and pi: the ceiling any
    estimator of this data set can be expected to reach (up to chance)."""
    log_pi = np.log(truth[truth.parameter == "profile_probability"].value.to_numpy())
    return modal_accuracy(data.true_beta(truth, lcdm.design(q)), log_pi, rm, truth, q)


def oracle_table(datasets, responses, truths) -> pd.DataFrame:
    """The oracle's accuracy on every simulated data set of the study: one row per data set,
    ``datasets`` naming each as ``(design, missing, rep)``, its files in ``responses`` and
    ``truths`` in the same order. The seed reports one accuracy on one data set; this is what
    each data set allowed."""
    rows = []
    for (design, missing, rep), resp, truth_path in zip(datasets, responses, truths, strict=True):
        rm, truth, q = data.read(resp, truth_path)
        acc = oracle_accuracy(rm, truth, q)
        rows.append(
            {
                "design": design,
                "missing": missing,
                "rep": int(rep),
                "pattern_accuracy": acc["pattern_accuracy"],
                "attribute_accuracy": acc["attribute_accuracy"],
            }
        )
    return pd.DataFrame(rows, columns=["design", "missing", "rep", "pattern_accuracy", "attribute_accuracy"])
