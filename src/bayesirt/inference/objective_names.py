"""Which imputation objectives draw imputed copies: the one fact about the objectives that the
workflow needs when it parses (to name the fit conditions), kept apart from
``inference.objectives`` so that parsing does not import JAX."""


def uses_copies(name: str) -> bool:
    return name in ("naive_average", "rao_blackwell", "rao_blackwell_batch")
