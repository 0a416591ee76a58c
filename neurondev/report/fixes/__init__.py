"""Verified source fixes (part of the report): the fixed line for each pin in the user's code, proven by tracing the fixed code again."""
