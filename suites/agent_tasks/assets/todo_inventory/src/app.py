from src.db import connect


def main() -> None:
    # TODO: read the port from the environment
    connect()
