"""Read the tiny CSV files the reports are made from."""


def load_rows(text: str) -> list[list[str]]:
    """The rows of a CSV text, each a list of fields."""
    return [line.split(",") for line in text.splitlines()]
