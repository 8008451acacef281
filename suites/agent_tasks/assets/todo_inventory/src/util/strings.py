def slug(text: str) -> str:
    return text.lower().replace(" ", "-")  # TODO: strip accents
