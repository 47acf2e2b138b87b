/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see the full text in
 * include/mcuprof.h.
 */
/* The protocol side: command parser, response queue and packetiser. Everything
 * here runs from mcuprof_poll(), outside the hooks, so it may take its time. */
#include "mcuprof.h"
#include "mcuprof_internal.h"
#include "mcuprof_port.h"

#define CMD_HEADER 0x55u
#define CMD_SIZE 12u
#define CMD_PAYLOAD_MAX 8u
#define RSP_OVERHEAD 8u    /* AA 55, type, length(2) ... crc(2), 0A */
#define DATA_HEADER 3u     /* version, record count */
#define RECORD_SIZE 14u
#define METADATA_SIZE 28u
#define STATUS_SIZE 10u
#define FW_VERSION_SIZE 16u
#define DATA_VERSION 0x01u
#define QUEUE_SIZE 8u      /* power of two */

#define TX_CAPACITY (RSP_OVERHEAD + DATA_HEADER + RECORD_SIZE * MCUPROF_MAX_RECORDS_PER_PACKET)

typedef struct {
    mcuprof_config_t cfg;
    uint32_t build_id;
    uint32_t last_flush;
    uint8_t rx[CMD_SIZE];
    uint32_t rx_len;
    uint8_t queue[QUEUE_SIZE]; /* response types waiting to be sent */
    uint32_t q_head;
    uint32_t q_tail;
    uint8_t tx[TX_CAPACITY];
    uint32_t tx_len;
    uint32_t tx_pos;
} link_t;

static link_t g_link;

MCUPROF_NOINSTR static void put_u16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

MCUPROF_NOINSTR static void put_u32(uint8_t *p, uint32_t v)
{
    put_u16(p, v);
    put_u16(p + 2, v >> 16);
}

MCUPROF_NOINSTR static void queue_response(uint8_t type)
{
    /* A full queue drops the answer; the host's command timeout retries. */
    if (g_link.q_head - g_link.q_tail < QUEUE_SIZE) {
        g_link.queue[g_link.q_head & (QUEUE_SIZE - 1u)] = type;
        g_link.q_head++;
    }
}

/* Frames the payload already written at tx[5..5+len) and arms transmission. */
MCUPROF_NOINSTR static void frame(uint8_t type, uint32_t len)
{
    uint8_t *p = g_link.tx;
    uint16_t crc;
    p[0] = 0xAAu;
    p[1] = 0x55u;
    p[2] = type;
    put_u16(p + 3, len);
    crc = mcuprof_crc16(0xFFFFu, p, 5u + len);
    put_u16(p + 5u + len, crc);
    p[7u + len] = 0x0Au;
    g_link.tx_len = RSP_OVERHEAD + len;
    g_link.tx_pos = 0u;
}

MCUPROF_NOINSTR static void build_response(uint8_t type)
{
    uint8_t *payload = g_link.tx + 5;
    uint32_t len = 0u;
    if (type == MCUPROF_RSP_METADATA) {
        const char *v = g_link.cfg.fw_version;
        uint32_t i;
        put_u32(payload, g_link.cfg.mcu_clock_hz);
        put_u32(payload + 4, g_link.cfg.timer_freq);
        put_u32(payload + 8, g_link.build_id);
        /* NUL-terminated and zero-padded, so at most 15 characters. */
        for (i = 0u; i < FW_VERSION_SIZE; i++) {
            uint8_t c = (v != 0 && i < FW_VERSION_SIZE - 1u) ? (uint8_t)*v : 0u;
            payload[12u + i] = c;
            if (c != 0u) {
                v++;
            }
        }
        len = METADATA_SIZE;
    } else if (type == MCUPROF_RSP_STATUS) {
        mcuprof_status_t s;
        mcuprof_get_status(&s);
        payload[0] = s.is_profiling;
        put_u32(payload + 1, s.buffer_overflows);
        put_u32(payload + 5, s.records_captured);
        payload[9] = s.buffer_usage_percent;
        len = STATUS_SIZE;
    }
    frame(type, len);
}

MCUPROF_NOINSTR static void build_data(uint32_t max_records)
{
    uint8_t *payload = g_link.tx + 5;
    uint8_t *out = payload + DATA_HEADER;
    mcuprof_record_t rec;
    uint32_t n = 0u;
    while (n < max_records && mcuprof_ring_pop(&rec)) {
        put_u32(out, rec.func_addr);
        put_u32(out + 4, rec.entry_time);
        put_u32(out + 8, rec.duration);
        put_u16(out + 12, rec.depth);
        out += RECORD_SIZE;
        n++;
    }
    payload[0] = DATA_VERSION;
    put_u16(payload + 1, n);
    frame(MCUPROF_RSP_PROFILE_DATA, DATA_HEADER + RECORD_SIZE * n);
}

/* SET_CONFIG payload (little-endian, every field optional, 0 keeps the value):
 *   [0..1] records per packet, 1..MCUPROF_MAX_RECORDS_PER_PACKET
 *   [2..5] flush interval in timer ticks */
MCUPROF_NOINSTR static int set_config(const uint8_t *payload, uint32_t len)
{
    uint32_t rpp = 0u;
    uint32_t flush = 0u;
    if (len >= 2u) {
        rpp = (uint32_t)payload[0] | ((uint32_t)payload[1] << 8);
    }
    if (len >= 6u) {
        flush = (uint32_t)payload[2] | ((uint32_t)payload[3] << 8) |
                ((uint32_t)payload[4] << 16) | ((uint32_t)payload[5] << 24);
    }
    if (rpp > MCUPROF_MAX_RECORDS_PER_PACKET) {
        return 0;
    }
    if (rpp != 0u) {
        g_link.cfg.records_per_packet = (uint16_t)rpp;
    }
    if (flush != 0u) {
        g_link.cfg.flush_ticks = flush;
    }
    return 1;
}

MCUPROF_NOINSTR static void dispatch(const uint8_t *cmd)
{
    uint32_t len = cmd[2];
    int ok = 1;
    if (len > CMD_PAYLOAD_MAX) {
        queue_response(MCUPROF_RSP_NACK);
        return;
    }
    switch (cmd[1]) {
    case MCUPROF_CMD_START:
        mcuprof_start();
        break;
    case MCUPROF_CMD_STOP:
        mcuprof_stop();
        break;
    case MCUPROF_CMD_RESET_BUFFERS:
        mcuprof_reset();
        break;
    case MCUPROF_CMD_GET_STATUS:
        queue_response(MCUPROF_RSP_STATUS);
        return;
    case MCUPROF_CMD_GET_METADATA:
        queue_response(MCUPROF_RSP_METADATA);
        return;
    case MCUPROF_CMD_SET_CONFIG:
        ok = set_config(cmd + 3, len);
        break;
    default:
        ok = 0;
        break;
    }
    queue_response(ok ? MCUPROF_RSP_ACK : MCUPROF_RSP_NACK);
}

MCUPROF_NOINSTR static void rx_byte(uint8_t b)
{
    uint32_t i;
    uint32_t sum = 0u;
    uint32_t next;
    if (g_link.rx_len == 0u && b != CMD_HEADER) {
        return; /* hunting for a header */
    }
    g_link.rx[g_link.rx_len++] = b;
    if (g_link.rx_len < CMD_SIZE) {
        return;
    }
    for (i = 0u; i < CMD_SIZE - 1u; i++) {
        sum += g_link.rx[i];
    }
    if ((sum & 0xFFu) == g_link.rx[CMD_SIZE - 1u]) {
        g_link.rx_len = 0u;
        dispatch(g_link.rx);
        return;
    }
    queue_response(MCUPROF_RSP_NACK);
    /* Resume hunting one byte after the bad header, so a stray 0x55 in line
     * noise cannot swallow the real command that follows it. */
    for (next = 1u; next < CMD_SIZE && g_link.rx[next] != CMD_HEADER; next++) {
    }
    for (i = next; i < CMD_SIZE; i++) {
        g_link.rx[i - next] = g_link.rx[i];
    }
    g_link.rx_len = CMD_SIZE - next;
}

MCUPROF_NOINSTR static int build_next(void)
{
    uint32_t pending;
    uint32_t rpp = g_link.cfg.records_per_packet;
    uint32_t now;
    if (g_link.q_head != g_link.q_tail) {
        uint8_t type = g_link.queue[g_link.q_tail & (QUEUE_SIZE - 1u)];
        g_link.q_tail++;
        build_response(type);
        return 1;
    }
    pending = mcuprof_ring_count();
    now = mcuprof_port_time();
    if (pending == 0u) {
        g_link.last_flush = now; /* a lone record waits at most flush_ticks */
        return 0;
    }
    if (pending >= rpp || !mcuprof_active || now - g_link.last_flush >= g_link.cfg.flush_ticks) {
        g_link.last_flush = now;
        build_data(rpp);
        return 1;
    }
    return 0;
}

void mcuprof_poll(void)
{
    uint32_t budget = 64u; /* bound the time spent here per call */
    for (;;) {
        int got_input = 0;
        /* One command at a time: its answer is built before the next command is
         * read, so a STATUS asked before a RESET_BUFFERS reports the old counts. */
        while (budget != 0u && g_link.q_head == g_link.q_tail) {
            int c = mcuprof_port_getc();
            if (c < 0) {
                break;
            }
            budget--;
            got_input = 1;
            rx_byte((uint8_t)c);
        }
        while (g_link.tx_pos < g_link.tx_len) {
            if (!mcuprof_port_putc(g_link.tx[g_link.tx_pos])) {
                return; /* transmitter busy: continue on the next poll */
            }
            g_link.tx_pos++;
        }
        if (!build_next() && !got_input) {
            return;
        }
    }
}

void mcuprof_init(const mcuprof_config_t *config)
{
    uintptr_t start;
    uintptr_t end;
    uint32_t text_len;
    mcuprof_active = 0u;
    mcuprof_ring_clear();
    g_link.cfg = *config;
    if (g_link.cfg.records_per_packet == 0u ||
        g_link.cfg.records_per_packet > MCUPROF_MAX_RECORDS_PER_PACKET) {
        g_link.cfg.records_per_packet = MCUPROF_MAX_RECORDS_PER_PACKET;
    }
    if (g_link.cfg.flush_ticks == 0u) {
        g_link.cfg.flush_ticks = g_link.cfg.timer_freq / 50u;
    }
    /* Compared as integers: the linker symbols are distinct objects to the
     * compiler, which may fold a pointer comparison between them, and .text
     * may legitimately start at address 0. */
    start = (uintptr_t)config->text_start;
    end = (uintptr_t)config->text_end;
    text_len = end > start ? (uint32_t)(end - start) : 0u;
    g_link.build_id = mcuprof_crc32(0u, config->text_start, text_len);
    g_link.rx_len = 0u;
    g_link.q_head = 0u;
    g_link.q_tail = 0u;
    g_link.tx_len = 0u;
    g_link.tx_pos = 0u;
    g_link.last_flush = mcuprof_port_time();
    queue_response(MCUPROF_RSP_METADATA);
}

void mcuprof_start(void)
{
    mcuprof_active = 1u;
}

void mcuprof_stop(void)
{
    mcuprof_active = 0u;
}

void mcuprof_reset(void)
{
    mcuprof_ring_clear();
}

void mcuprof_get_status(mcuprof_status_t *out)
{
    uint32_t state = mcuprof_port_critical_enter();
    uint32_t used = mcuprof_ring.head - mcuprof_ring.tail;
    out->is_profiling = mcuprof_active;
    out->buffer_overflows = mcuprof_ring.overflows;
    out->records_captured = mcuprof_ring.captured;
    mcuprof_port_critical_exit(state);
    out->buffer_usage_percent = (uint8_t)((used * 100u) / MCUPROF_RING_SIZE);
}

uint32_t mcuprof_build_id(void)
{
    return g_link.build_id;
}
