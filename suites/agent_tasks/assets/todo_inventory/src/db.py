def connect() -> None:
    """Open the database."""
    # TODO: retry when the database is not up yet
    return None
