/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see the full text in
 * include/mcuprof.h.
 */
/* Checksums, four bits at a time: 16-entry tables keep ROM small and are still
 * about four times faster than the bit loop. */
#include "mcuprof.h"

static const uint16_t crc16_nibble[16] = {
    0x0000u, 0x1021u, 0x2042u, 0x3063u, 0x4084u, 0x50a5u, 0x60c6u, 0x70e7u,
    0x8108u, 0x9129u, 0xa14au, 0xb16bu, 0xc18cu, 0xd1adu, 0xe1ceu, 0xf1efu,
};

static const uint32_t crc32_nibble[16] = {
    0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu, 0x76dc4190u, 0x6b6b51f4u,
    0x4db26158u, 0x5005713cu, 0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
    0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
};

/* CRC-16/CCITT-FALSE (poly 0x1021, MSB first); start with crc = 0xFFFF. */
uint16_t mcuprof_crc16(uint16_t crc, const uint8_t *data, uint32_t len)
{
    uint32_t c = crc;
    while (len--) {
        uint32_t b = *data++;
        c = ((c << 4) & 0xFFFFu) ^ crc16_nibble[((c >> 12) ^ (b >> 4)) & 0xFu];
        c = ((c << 4) & 0xFFFFu) ^ crc16_nibble[((c >> 12) ^ b) & 0xFu];
    }
    return (uint16_t)c;
}

/* CRC-32 exactly as zlib.crc32(data, crc): pass 0 to start, chain the result. */
uint32_t mcuprof_crc32(uint32_t crc, const uint8_t *data, uint32_t len)
{
    uint32_t c = ~crc;
    while (len--) {
        c ^= *data++;
        c = (c >> 4) ^ crc32_nibble[c & 0xFu];
        c = (c >> 4) ^ crc32_nibble[c & 0xFu];
    }
    return ~c;
}
