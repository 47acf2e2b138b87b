"""Subcommands of the ``mcuprof`` CLI, one module each, discovered by ``mcuprof.cli``."""
