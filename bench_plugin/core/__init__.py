"""The ground floor: the words every stage shares (messages, endpoints, transcripts, errors, look-ups)."""
