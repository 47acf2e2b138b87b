"""The one error type for "the peer sent something that is not the protocol"."""


class ProtocolError(ValueError):
    pass
