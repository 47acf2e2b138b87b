/*
 * mcuprof target library: function-level profiling over the MiniProfiler protocol.
 *
 * Copyright (c) 2026 the mcuprof authors
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 *
 * How to use it:
 *   1. Compile your code with -finstrument-functions (not this library's files:
 *      every function here is also marked no_instrument_function, so it is safe
 *      either way).
 *   2. Implement the five functions of mcuprof_port.h for your MCU.
 *   3. Call mcuprof_init() once at boot, after the UART works and before you
 *      expect records, then call mcuprof_poll() from your idle loop (or from a
 *      UART/DMA "ready" callback). The hooks only store records; all protocol
 *      traffic happens in mcuprof_poll(), never inside the hooks.
 *
 * C99, no dynamic memory, no libc calls.
 */
#ifndef MCUPROF_H
#define MCUPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compile-time switch: build with -DMCUPROF_ENABLE=0 and the hooks compile to
 * empty functions (the protocol side still answers commands). */
#ifndef MCUPROF_ENABLE
#define MCUPROF_ENABLE 1
#endif

/* Ring buffer capacity in records; must be a power of two. 16 bytes of RAM each. */
#ifndef MCUPROF_RING_SIZE
#define MCUPROF_RING_SIZE 256u
#endif

/* Upper bound of records per PROFILE_DATA packet (sets the transmit buffer size:
 * 11 + 14 * N bytes). SET_CONFIG may lower it at run time. */
#ifndef MCUPROF_MAX_RECORDS_PER_PACKET
#define MCUPROF_MAX_RECORDS_PER_PACKET 32u
#endif

/* Deepest call nesting whose entry time is kept; deeper calls are counted but
 * produce no record (see mcuprof_depth_drops()). */
#ifndef MCUPROF_MAX_DEPTH
#define MCUPROF_MAX_DEPTH 64u
#endif

#if defined(__GNUC__)
#define MCUPROF_NOINSTR __attribute__((no_instrument_function))
#else
#define MCUPROF_NOINSTR
#endif

/* Protocol constants (see docs: MiniProfiler protocol + clarifications). */
#define MCUPROF_CMD_START 0x01u
#define MCUPROF_CMD_STOP 0x02u
#define MCUPROF_CMD_GET_STATUS 0x03u
#define MCUPROF_CMD_RESET_BUFFERS 0x04u
#define MCUPROF_CMD_GET_METADATA 0x05u
#define MCUPROF_CMD_SET_CONFIG 0x06u

#define MCUPROF_RSP_ACK 0x01u
#define MCUPROF_RSP_NACK 0x02u
#define MCUPROF_RSP_METADATA 0x03u
#define MCUPROF_RSP_STATUS 0x04u
#define MCUPROF_RSP_PROFILE_DATA 0x05u

typedef struct {
    uint32_t mcu_clock_hz;    /* reported in METADATA */
    uint32_t timer_freq;      /* rate of mcuprof_port_time(), ticks per second */
    const char *fw_version;   /* up to 15 characters are sent */
    const uint8_t *text_start; /* first byte of the linked .text section */
    const uint8_t *text_end;   /* one past its last byte */
    uint32_t flush_ticks;     /* send a part-filled packet after this many ticks; 0 = timer_freq/50 */
    uint16_t records_per_packet; /* 0 = MCUPROF_MAX_RECORDS_PER_PACKET */
} mcuprof_config_t;

typedef struct {
    uint8_t is_profiling;
    uint32_t buffer_overflows; /* records overwritten before they were sent */
    uint32_t records_captured; /* records made since the last reset */
    uint8_t buffer_usage_percent;
} mcuprof_status_t;

/* Resets all state, computes the build ID (CRC-32 of .text) and queues the boot
 * METADATA packet. Call it before mcuprof_poll(). */
void mcuprof_init(const mcuprof_config_t *config) MCUPROF_NOINSTR;

/* Receives commands, answers them and sends queued packets. Never blocks:
 * it writes bytes only while mcuprof_port_putc() accepts them. */
void mcuprof_poll(void) MCUPROF_NOINSTR;

/* Run-time switch, the same as the START / STOP commands. */
void mcuprof_start(void) MCUPROF_NOINSTR;
void mcuprof_stop(void) MCUPROF_NOINSTR;
/* Empties the ring buffer and clears the STATUS counters. */
void mcuprof_reset(void) MCUPROF_NOINSTR;

void mcuprof_get_status(mcuprof_status_t *out) MCUPROF_NOINSTR;
uint32_t mcuprof_build_id(void) MCUPROF_NOINSTR;
/* Calls that returned deeper than MCUPROF_MAX_DEPTH (no record was made). */
uint32_t mcuprof_depth_drops(void) MCUPROF_NOINSTR;

/* zlib-compatible CRC-32 and the protocol's CRC-16/CCITT-FALSE, exposed for tests. */
uint32_t mcuprof_crc32(uint32_t crc, const uint8_t *data, uint32_t len) MCUPROF_NOINSTR;
uint16_t mcuprof_crc16(uint16_t crc, const uint8_t *data, uint32_t len) MCUPROF_NOINSTR;

/* The GCC instrumentation hooks. */
void __cyg_profile_func_enter(void *this_fn, void *call_site) MCUPROF_NOINSTR;
void __cyg_profile_func_exit(void *this_fn, void *call_site) MCUPROF_NOINSTR;

#ifdef __cplusplus
}
#endif

#endif /* MCUPROF_H */
