"""Errors a user can act on. The CLI and the web layer print their message as one line."""


class UserError(Exception):
    """Bad input from the user or the outside world: a missing file, a bad ELF, a busy port."""
