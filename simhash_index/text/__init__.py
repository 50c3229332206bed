"""Text: the main text of an HTML page, normalised and cut into tokens."""
