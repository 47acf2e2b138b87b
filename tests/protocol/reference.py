"""Independent reference implementations the codec is checked against."""


def crc16_bitwise(data: bytes) -> int:
    """Reference CRC-16/CCITT-FALSE, one bit at a time, written from the definition."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc
