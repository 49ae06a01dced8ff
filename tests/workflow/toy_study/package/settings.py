"""The toy study has no checks beyond its schema block."""


def check(config: dict) -> None:
    return None
