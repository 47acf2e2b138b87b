"""The live session (session.py: LiveSession) and its parts, one job each."""
