"""Reporters turn results into text for people and machines."""
