"""A toy study for the template test: the mean of normal data, by the sample mean and median."""

from bayesirt.studies.toy import conditions  # noqa: F401
