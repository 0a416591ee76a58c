"""Loops: every compile across the calls of a loop, why it happened, and what to write instead."""
