/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see the full text in
 * include/mcuprof.h.
 */
/* A minimal QS-compatible trace encoder and QS-RX command parser.
 *
 * Unlike QP, which stuffs each frame into its buffer as it records, mcuqs stores the
 * raw record (length, sequence number, record id, timestamp, data) and does the
 * framing -- checksum, escapes, flag -- in mcuqs_poll(), outside the time-critical
 * path: a record costs a copy, not a byte-stuffing loop. Each record is stored inside
 * one short critical section, so records from interrupts never tear each other.
 * Last is best: a record that does not fit drops the oldest whole records, so the
 * host sees a sequence-number gap but never a torn frame. mcuqs_poll() takes one
 * record at a time out of the buffer before framing it, so recording never has to
 * wait for the transmitter. */
#include "mcuqs.h"
#include "mcuprof_port.h"

#define FLAG 0x7Eu
#define ESC 0x7Du
#define ESC_XOR 0x20u
#define MASK (MCUQS_BUF_SIZE - 1u)
#define PTR_SIZE ((uint32_t)sizeof(void *))
#define QP_VERSION 740u
#define MAX_REC (2u + 4u + MCUQS_MAX_DATA) /* seq, record id, timestamp, data */

#if (MCUQS_BUF_SIZE & MASK) != 0u || MCUQS_BUF_SIZE < 256u
#error "MCUQS_BUF_SIZE must be a power of two, at least 256"
#endif

/* Little-endian stores: one unaligned store each on a little-endian CPU. */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define STORE(d, v, size) __builtin_memcpy((d), &(v), (size))
#else
#define STORE(d, v, size) store_le((d), (uint64_t)(v), (size))
MCUPROF_NOINSTR static void store_le(uint8_t *d, uint64_t v, uint32_t size)
{
    uint32_t i;
    for (i = 0u; i < size; i++) {
        d[i] = (uint8_t)(v >> (8u * i));
    }
}
#endif

static uint8_t g_buf[MCUQS_BUF_SIZE]; /* records: [n][seq][rec][ts][data], n after itself */
static volatile uint32_t g_head;      /* free-running byte indices */
static volatile uint32_t g_tail;
static uint8_t g_seq;
static volatile uint32_t g_lost;
static uint8_t g_filter[32]; /* global filter, one bit per record id */
static const mcuqs_config_t *g_config;

static uint8_t g_tx[2u * MAX_REC + 4u]; /* the frame being sent, stuffed */
static uint32_t g_tx_len;
static uint32_t g_tx_pos;

static uint8_t g_rx[MCUQS_RX_MAX + 3u]; /* seq, record id, data, checksum */
static uint32_t g_rx_len;
static uint8_t g_rx_sum;
static uint8_t g_rx_esc;
static uint8_t g_rx_over;
static uint32_t g_rx_bad;

/* Stores one record. Never filtered: callers check the filter. */
MCUPROF_NOINSTR static void put_record(uint8_t rec, int stamped, const uint8_t *data,
                                       uint32_t len)
{
    uint32_t n = 2u + len + (stamped ? 4u : 0u);
    uint32_t key = mcuprof_port_critical_enter();
    uint32_t h = g_head;
    uint32_t t = g_tail;
    uint32_t i;
    uint8_t seq = (uint8_t)(g_seq + 1u);
    while (MCUQS_BUF_SIZE - (h - t) < n + 1u) { /* last is best: drop the oldest */
        t += 1u + g_buf[t & MASK];
        g_lost++;
    }
    g_tail = t;
    g_seq = seq;
    if ((h & MASK) + n + 1u <= MCUQS_BUF_SIZE) { /* the usual case: no wrap */
        uint8_t *p = &g_buf[h & MASK];
        *p++ = (uint8_t)n;
        *p++ = seq;
        *p++ = rec;
        if (stamped) {
            uint32_t ts = mcuprof_port_time();
            STORE(p, ts, 4u);
            p += 4;
        }
        for (i = 0u; i < len; i++) {
            p[i] = data[i];
        }
    } else {
        uint8_t head[7];
        uint32_t k = 3u;
        head[0] = (uint8_t)n;
        head[1] = seq;
        head[2] = rec;
        if (stamped) {
            uint32_t ts = mcuprof_port_time();
            STORE(&head[3], ts, 4u);
            k = 7u;
        }
        for (i = 0u; i < k; i++) {
            g_buf[(h + i) & MASK] = head[i];
        }
        for (i = 0u; i < len; i++) {
            g_buf[(h + k + i) & MASK] = data[i];
        }
    }
    g_head = h + 1u + n;
    mcuprof_port_critical_exit(key);
}

int mcuqs_enabled(uint8_t rec)
{
    return (g_filter[rec >> 3] >> (rec & 7u)) & 1u;
}

void mcuqs_filter(uint8_t rec, int on)
{
    uint8_t bit = (uint8_t)(1u << (rec & 7u));
    if (on) {
        g_filter[rec >> 3] |= bit;
    } else {
        g_filter[rec >> 3] &= (uint8_t)~bit;
    }
}

void mcuqs_record(uint8_t rec, int stamped, const uint8_t *data, uint32_t len)
{
    if (((g_filter[rec >> 3] >> (rec & 7u)) & 1u) != 0u && len <= MCUQS_MAX_DATA) {
        put_record(rec, stamped, data, len);
    }
}

/* ------------------------------------------------------------------ packing */

MCUPROF_NOINSTR static inline uint32_t pack(uint8_t *d, uint32_t n, uint32_t v, uint32_t size)
{
    if (size == 2u) {
        uint16_t v16 = (uint16_t)v;
        STORE(&d[n], v16, 2u);
    } else if (size == 4u) {
        STORE(&d[n], v, 4u);
    } else {
        d[n] = (uint8_t)v;
    }
    return n + size;
}

MCUPROF_NOINSTR static inline uint32_t pack_ptr(uint8_t *d, uint32_t n, uintptr_t v)
{
    STORE(&d[n], v, PTR_SIZE);
    return n + PTR_SIZE;
}

#define OBJ(p) ((uintptr_t)(const void *)(p))
#define FUN(f) ((uintptr_t)(f))

void mcuqs_target_info(uint8_t is_reset)
{
    uint8_t d[16];
    uint32_t i;
    const mcuqs_config_t *c = g_config;
    d[0] = is_reset;
    d[1] = (uint8_t)(QP_VERSION & 0xFFu);
    d[2] = (uint8_t)(QP_VERSION >> 8); /* bit 15 clear: little-endian target */
    d[3] = 0x22u;                      /* signal 2, event size 2 */
    d[4] = 0x41u;                      /* queue counter 1, time-event counter 4 */
    d[5] = 0x22u;                      /* pool block size 2, pool counter 2 */
    d[6] = (uint8_t)(PTR_SIZE | (PTR_SIZE << 4)); /* object, function pointer */
    d[7] = 4u;                                    /* timestamp */
    d[8] = c->max_active;
    d[9] = (uint8_t)((c->max_epool & 0xFu) | (uint8_t)(c->max_tick_rate << 4));
    for (i = 0u; i < 6u; i++) {
        d[10u + i] = c->build[i];
    }
    put_record(MCUQS_TARGET_INFO, 0, d, sizeof d);
}

void mcuqs_init(const mcuqs_config_t *config)
{
    uint32_t i;
    uint32_t key = mcuprof_port_critical_enter();
    g_config = config;
    g_head = g_tail = 0u;
    g_tx_len = g_tx_pos = 0u;
    g_seq = 0u;
    g_lost = 0u;
    g_rx_len = 0u;
    g_rx_sum = 0u;
    g_rx_esc = 0u;
    g_rx_over = 0u;
    g_rx_bad = 0u;
    for (i = 0u; i < sizeof g_filter; i++) {
        g_filter[i] = 0xFFu;
    }
    mcuprof_port_critical_exit(key);
    put_record(MCUQS_EMPTY, 0, 0, 0u);
    mcuqs_target_info(0xFFu);
}

/* Names lose a leading '&' (MCUQS_OBJ_DICT(&obj) names it "obj") and are cut to fit
 * MCUQS_MAX_DATA. */
MCUPROF_NOINSTR static void dict(uint8_t rec, uint8_t *d, uint32_t n, const char *name)
{
    if (*name == '&') {
        name++;
    }
    while (*name != '\0' && n < MCUQS_MAX_DATA - 1u) {
        d[n++] = (uint8_t)*name++;
    }
    d[n++] = 0u;
    put_record(rec, 0, d, n);
}

void mcuqs_obj_dict(const void *obj, const char *name)
{
    uint8_t d[MCUQS_MAX_DATA];
    dict(MCUQS_OBJ_DICT, d, pack_ptr(d, 0u, OBJ(obj)), name);
}

void mcuqs_fun_dict(mcuqs_fun_t fun, const char *name)
{
    uint8_t d[MCUQS_MAX_DATA];
    dict(MCUQS_FUN_DICT, d, pack_ptr(d, 0u, FUN(fun)), name);
}

void mcuqs_sig_dict(uint16_t sig, const void *obj, const char *name)
{
    uint8_t d[MCUQS_MAX_DATA];
    dict(MCUQS_SIG_DICT, d, pack_ptr(d, pack(d, 0u, sig, 2u), OBJ(obj)), name);
}

void mcuqs_usr_dict(uint8_t rec, const char *name)
{
    uint8_t d[MCUQS_MAX_DATA];
    d[0] = rec;
    dict(MCUQS_USR_DICT, d, 1u, name);
}

/* ------------------------------------------------------------------ records */

void mcuqs_sm(uint8_t rec, uint16_t sig, const void *obj, mcuqs_fun_t state)
{
    uint8_t d[2u + 2u * sizeof(void *)];
    uint32_t n = pack(d, 0u, sig, 2u);
    n = pack_ptr(d, n, OBJ(obj));
    n = pack_ptr(d, n, FUN(state));
    mcuqs_record(rec, rec != MCUQS_UNHANDLED, d, n);
}

void mcuqs_state(uint8_t rec, const void *obj, mcuqs_fun_t state)
{
    uint8_t d[2u * sizeof(void *)];
    mcuqs_record(rec, 0, d, pack_ptr(d, pack_ptr(d, 0u, OBJ(obj)), FUN(state)));
}

void mcuqs_tran(uint16_t sig, const void *obj, mcuqs_fun_t source, mcuqs_fun_t target)
{
    uint8_t d[2u + 3u * sizeof(void *)];
    uint32_t n = pack(d, 0u, sig, 2u);
    n = pack_ptr(d, n, OBJ(obj));
    n = pack_ptr(d, n, FUN(source));
    n = pack_ptr(d, n, FUN(target));
    mcuqs_record(MCUQS_TRAN, 1, d, n);
}

void mcuqs_init_tran(const void *obj, mcuqs_fun_t source, mcuqs_fun_t target)
{
    uint8_t d[3u * sizeof(void *)];
    uint32_t n = pack_ptr(d, 0u, OBJ(obj));
    n = pack_ptr(d, n, FUN(source));
    n = pack_ptr(d, n, FUN(target));
    mcuqs_record(MCUQS_STATE_INIT, 0, d, n);
}

void mcuqs_top_init(const void *obj, mcuqs_fun_t state)
{
    uint8_t d[2u * sizeof(void *)];
    mcuqs_record(MCUQS_INIT_TRAN, 1, d, pack_ptr(d, pack_ptr(d, 0u, OBJ(obj)), FUN(state)));
}

void mcuqs_post(const void *sender, uint16_t sig, const void *ao, uint8_t pool, uint8_t ref,
                uint8_t free, uint8_t min)
{
    uint8_t d[6u + 2u * sizeof(void *)];
    uint32_t n = pack_ptr(d, 0u, OBJ(sender));
    n = pack(d, n, sig, 2u);
    n = pack_ptr(d, n, OBJ(ao));
    d[n++] = pool;
    d[n++] = ref;
    d[n++] = free;
    d[n++] = min;
    mcuqs_record(MCUQS_ACTIVE_POST, 1, d, n);
}

void mcuqs_get(uint16_t sig, const void *ao, uint8_t pool, uint8_t ref, uint8_t free, int last)
{
    uint8_t d[5u + sizeof(void *)];
    uint32_t n = pack(d, 0u, sig, 2u);
    n = pack_ptr(d, n, OBJ(ao));
    d[n++] = pool;
    d[n++] = ref;
    if (!last) {
        d[n++] = free;
    }
    mcuqs_record(last ? MCUQS_ACTIVE_GET_LAST : MCUQS_ACTIVE_GET, 1, d, n);
}

void mcuqs_pool(uint8_t rec, const void *pool, uint16_t free, uint16_t min)
{
    uint8_t d[4u + sizeof(void *)];
    uint32_t n = pack(d, pack_ptr(d, 0u, OBJ(pool)), free, 2u);
    if (rec == MCUQS_MPOOL_GET) {
        n = pack(d, n, min, 2u);
    }
    mcuqs_record(rec, 1, d, n);
}

void mcuqs_new(uint16_t size, uint16_t sig)
{
    uint8_t d[4];
    mcuqs_record(MCUQS_QF_NEW, 1, d, pack(d, pack(d, 0u, size, 2u), sig, 2u));
}

void mcuqs_gc(uint16_t sig, uint8_t pool, uint8_t ref)
{
    uint8_t d[4];
    uint32_t n = pack(d, 0u, sig, 2u);
    d[n++] = pool;
    d[n++] = ref;
    mcuqs_record(MCUQS_QF_GC, 1, d, n);
}

void mcuqs_tick(uint32_t ctr, uint8_t rate)
{
    uint8_t d[5];
    uint32_t n = pack(d, 0u, ctr, 4u);
    d[n++] = rate;
    mcuqs_record(MCUQS_QF_TICK, 0, d, n);
}

void mcuqs_te_arm(const void *te, const void *ao, uint32_t ctr, uint32_t interval, uint8_t rate)
{
    uint8_t d[9u + 2u * sizeof(void *)];
    uint32_t n = pack_ptr(d, 0u, OBJ(te));
    n = pack_ptr(d, n, OBJ(ao));
    n = pack(d, n, ctr, 4u);
    n = pack(d, n, interval, 4u);
    d[n++] = rate;
    mcuqs_record(MCUQS_TIMEEVT_ARM, 1, d, n);
}

void mcuqs_te_post(const void *te, uint16_t sig, const void *ao, uint8_t rate)
{
    uint8_t d[3u + 2u * sizeof(void *)];
    uint32_t n = pack_ptr(d, 0u, OBJ(te));
    n = pack(d, n, sig, 2u);
    n = pack_ptr(d, n, OBJ(ao));
    d[n++] = rate;
    mcuqs_record(MCUQS_TIMEEVT_POST, 1, d, n);
}

void mcuqs_qf_run(void)
{
    put_record(MCUQS_QF_RUN, 0, 0, 0u);
}

/* ------------------------------------------------------- application records */

void mcuqs_args_init(mcuqs_args_t *a)
{
    a->len = 0u;
}

MCUPROF_NOINSTR static void arg(mcuqs_args_t *a, uint8_t fmt, uint32_t v, uint32_t size)
{
    if (a->len + 1u + size <= MCUQS_MAX_DATA) {
        a->data[a->len] = fmt;
        a->len = (uint8_t)pack(a->data, a->len + 1u, v, size);
    }
}

#define FMT(width, type) ((uint8_t)(((width) << 4) | (type)))

void mcuqs_arg_u8(mcuqs_args_t *a, uint8_t width, uint8_t v)
{
    arg(a, FMT(width & 0xFu, MCUQS_FMT_U8), v, 1u);
}

void mcuqs_arg_i16(mcuqs_args_t *a, uint8_t width, int16_t v)
{
    arg(a, FMT(width & 0xFu, MCUQS_FMT_I16), (uint16_t)v, 2u);
}

void mcuqs_arg_u16(mcuqs_args_t *a, uint8_t width, uint16_t v)
{
    arg(a, FMT(width & 0xFu, MCUQS_FMT_U16), v, 2u);
}

void mcuqs_arg_i32(mcuqs_args_t *a, uint8_t width, int32_t v)
{
    arg(a, FMT(width & 0xFu, MCUQS_FMT_I32), (uint32_t)v, 4u);
}

void mcuqs_arg_u32(mcuqs_args_t *a, uint8_t width, uint32_t v)
{
    arg(a, FMT(width & 0xFu, MCUQS_FMT_U32), v, 4u);
}

void mcuqs_arg_str(mcuqs_args_t *a, const char *s)
{
    uint32_t n = a->len;
    if (n + 2u > MCUQS_MAX_DATA) {
        return;
    }
    a->data[n++] = MCUQS_FMT_STR;
    while (*s != '\0' && n < MCUQS_MAX_DATA - 1u) {
        a->data[n++] = (uint8_t)*s++;
    }
    a->data[n++] = 0u;
    a->len = (uint8_t)n;
}

void mcuqs_arg_obj(mcuqs_args_t *a, const void *obj)
{
    if (a->len + 1u + PTR_SIZE <= MCUQS_MAX_DATA) {
        a->data[a->len] = MCUQS_FMT_OBJ;
        a->len = (uint8_t)pack_ptr(a->data, a->len + 1u, OBJ(obj));
    }
}

void mcuqs_user(uint8_t rec, const mcuqs_args_t *a)
{
    mcuqs_record(rec, 1, a->data, a->len);
}

/* ------------------------------------------------------------------ QS-RX */

MCUPROF_NOINSTR static void ack(uint8_t status)
{
    put_record(MCUQS_RX_STATUS, 0, &status, 1u);
}

MCUPROF_NOINSTR static void rx_frame(uint8_t rec, const uint8_t *data, uint32_t len)
{
    const mcuqs_config_t *c = g_config;
    uint32_t i;
    switch (rec) {
    case MCUQS_RX_INFO:
        ack(rec);
        mcuqs_target_info(0u);
        return;
    case MCUQS_RX_RESET:
        if (c->on_reset != 0) {
            c->on_reset(); /* does not return on a real reset */
            return;
        }
        break;
    case MCUQS_RX_TICK:
        if (c->on_tick != 0 && len >= 1u) {
            uint8_t done = rec;
            ack(rec);
            c->on_tick(data[0]);
            put_record(MCUQS_TARGET_DONE, 1, &done, 1u);
            return;
        }
        break;
    case MCUQS_RX_GLB_FILTER:
        /* A length byte, then that many bytes of bitmap (record 0 in bit 0). */
        if (len >= 1u && data[0] <= 16u && len >= 1u + data[0]) {
            for (i = 0u; i < data[0]; i++) {
                g_filter[i] = data[1u + i];
            }
            ack(rec);
            return;
        }
        break;
    default:
        break;
    }
    ack((uint8_t)(0x80u | rec));
}

MCUPROF_NOINSTR static void rx_byte(uint8_t b)
{
    if (g_rx_esc) { /* an escape applies to any byte, even a flag */
        g_rx_esc = 0u;
        b ^= ESC_XOR;
    } else if (b == FLAG) {
        if (g_rx_len >= 3u && !g_rx_over && g_rx_sum == 0xFFu) {
            rx_frame(g_rx[1], &g_rx[2], g_rx_len - 3u);
        } else if (g_rx_len != 0u || g_rx_over) {
            g_rx_bad++;
        }
        g_rx_len = 0u;
        g_rx_sum = 0u;
        g_rx_over = 0u;
        return;
    } else if (b == ESC) {
        g_rx_esc = 1u;
        return;
    }
    g_rx_sum = (uint8_t)(g_rx_sum + b);
    if (g_rx_len < sizeof g_rx) {
        g_rx[g_rx_len++] = b;
    } else {
        g_rx_over = 1u;
    }
}

/* ------------------------------------------------------------------ transmit */

MCUPROF_NOINSTR static inline uint32_t stuff(uint32_t k, uint8_t b)
{
    if (b == FLAG || b == ESC) {
        g_tx[k++] = ESC;
        b ^= ESC_XOR;
    }
    g_tx[k++] = b;
    return k;
}

/* Takes the oldest record out of the buffer and frames it into g_tx. */
MCUPROF_NOINSTR static int next_frame(void)
{
    uint8_t raw[MAX_REC];
    uint32_t i, n, k = 0u, sum = 0u;
    uint32_t key = mcuprof_port_critical_enter();
    uint32_t t = g_tail;
    if (t == g_head) {
        mcuprof_port_critical_exit(key);
        return 0;
    }
    n = g_buf[t & MASK];
    for (i = 0u; i < n; i++) {
        raw[i] = g_buf[(t + 1u + i) & MASK];
    }
    g_tail = t + 1u + n;
    mcuprof_port_critical_exit(key);
    for (i = 0u; i < n; i++) {
        sum += raw[i];
        k = stuff(k, raw[i]);
    }
    k = stuff(k, (uint8_t)~sum);
    g_tx[k++] = FLAG;
    g_tx_len = k;
    g_tx_pos = 0u;
    return 1;
}

uint32_t mcuqs_poll(uint32_t max_bytes)
{
    uint32_t sent = 0u;
    int c;
    while ((c = mcuprof_port_getc()) >= 0) {
        rx_byte((uint8_t)c);
    }
    while (max_bytes == 0u || sent < max_bytes) {
        if (g_tx_pos == g_tx_len && !next_frame()) {
            break;
        }
        if (!mcuprof_port_putc(g_tx[g_tx_pos])) {
            break;
        }
        g_tx_pos++;
        sent++;
    }
    return sent;
}

uint32_t mcuqs_pending(void)
{
    return g_head - g_tail + g_tx_len - g_tx_pos;
}

uint32_t mcuqs_lost_frames(void)
{
    return g_lost;
}

uint32_t mcuqs_rx_bad_frames(void)
{
    return g_rx_bad;
}
