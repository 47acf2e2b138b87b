"""QP/Spy on the host: QSPY-compatible text and .dic dictionary files.

The decoder itself is sans-IO and lives in ``mcuprof.protocol.qs``.
"""
