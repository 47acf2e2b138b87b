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

static uint8_t g_loc[16];   /* local filter, one bit per QS-ID */
static uint8_t g_loc_all;   /* every bit of g_loc is on: records skip the QS-ID lookup */
static const void *g_id_obj[MCUQS_MAX_IDS]; /* objects with a QS-ID, and their ids */
static uint8_t g_id[MCUQS_MAX_IDS];
static uint32_t g_n_ids;
static void *g_curr[MCUQS_OBJ_KINDS]; /* QS-RX current objects: SM, AO, MP, EQ, TE, AP */

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

int mcuqs_obj_id(const void *obj, uint8_t id)
{
    uint32_t i;
    for (i = 0u; i < g_n_ids; i++) {
        if (g_id_obj[i] == obj) {
            g_id[i] = (uint8_t)(id & 0x7Fu);
            return 1;
        }
    }
    if (g_n_ids == MCUQS_MAX_IDS) {
        return 0;
    }
    g_id_obj[g_n_ids] = obj;
    g_id[g_n_ids++] = (uint8_t)(id & 0x7Fu);
    return 1;
}

/* The QS-ID of obj: 0 (always on) for objects never given one. */
MCUPROF_NOINSTR static uint8_t qs_id(const void *obj)
{
    uint32_t i;
    for (i = 0u; i < g_n_ids; i++) {
        if (g_id_obj[i] == obj) {
            return g_id[i];
        }
    }
    return 0u;
}

int mcuqs_loc_enabled(uint8_t id)
{
    return (g_loc[(id >> 3) & 15u] >> (id & 7u)) & 1u;
}

/* A record about obj (at most MCUQS_MAX_DATA bytes, as every caller's is): it must pass
 * the global filter and obj's local filter. Inline, and the QS-ID is looked up only
 * while some local filter bit is off: a dispatch record costs what it did before local
 * filters (bench/qs_firmware.py). */
MCUPROF_NOINSTR static inline void record_obj(uint8_t rec, const void *obj, int stamped,
                                              const uint8_t *data, uint32_t len)
{
    if (((g_filter[rec >> 3] >> (rec & 7u)) & 1u) != 0u &&
        (g_loc_all || mcuqs_loc_enabled(qs_id(obj)))) {
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
    for (i = 0u; i < sizeof g_loc; i++) {
        g_loc[i] = 0xFFu;
    }
    g_loc_all = 1u;
    for (i = 0u; i < MCUQS_OBJ_KINDS; i++) {
        g_curr[i] = 0;
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
    record_obj(rec, obj, rec != MCUQS_UNHANDLED, d, n);
}

void mcuqs_state(uint8_t rec, const void *obj, mcuqs_fun_t state)
{
    uint8_t d[2u * sizeof(void *)];
    record_obj(rec, obj, 0, d, pack_ptr(d, pack_ptr(d, 0u, OBJ(obj)), FUN(state)));
}

void mcuqs_tran(uint16_t sig, const void *obj, mcuqs_fun_t source, mcuqs_fun_t target)
{
    uint8_t d[2u + 3u * sizeof(void *)];
    uint32_t n = pack(d, 0u, sig, 2u);
    n = pack_ptr(d, n, OBJ(obj));
    n = pack_ptr(d, n, FUN(source));
    n = pack_ptr(d, n, FUN(target));
    record_obj(MCUQS_TRAN, obj, 1, d, n);
}

void mcuqs_init_tran(const void *obj, mcuqs_fun_t source, mcuqs_fun_t target)
{
    uint8_t d[3u * sizeof(void *)];
    uint32_t n = pack_ptr(d, 0u, OBJ(obj));
    n = pack_ptr(d, n, FUN(source));
    n = pack_ptr(d, n, FUN(target));
    record_obj(MCUQS_STATE_INIT, obj, 0, d, n);
}

void mcuqs_top_init(const void *obj, mcuqs_fun_t state)
{
    uint8_t d[2u * sizeof(void *)];
    record_obj(MCUQS_INIT_TRAN, obj, 1, d, pack_ptr(d, pack_ptr(d, 0u, OBJ(obj)), FUN(state)));
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
    record_obj(MCUQS_ACTIVE_POST, ao, 1, d, n);
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
    record_obj(last ? MCUQS_ACTIVE_GET_LAST : MCUQS_ACTIVE_GET, ao, 1, d, n);
}

void mcuqs_pool(uint8_t rec, const void *pool, uint16_t free, uint16_t min)
{
    uint8_t d[4u + sizeof(void *)];
    uint32_t n = pack(d, pack_ptr(d, 0u, OBJ(pool)), free, 2u);
    if (rec == MCUQS_MPOOL_GET) {
        n = pack(d, n, min, 2u);
    }
    record_obj(rec, pool, 1, d, n);
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
    record_obj(MCUQS_TIMEEVT_ARM, ao, 1, d, n);
}

void mcuqs_te_post(const void *te, uint16_t sig, const void *ao, uint8_t rate)
{
    uint8_t d[3u + 2u * sizeof(void *)];
    uint32_t n = pack_ptr(d, 0u, OBJ(te));
    n = pack(d, n, sig, 2u);
    n = pack_ptr(d, n, OBJ(ao));
    d[n++] = rate;
    record_obj(MCUQS_TIMEEVT_POST, ao, 1, d, n);
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

MCUPROF_NOINSTR static void done(uint8_t rec)
{
    put_record(MCUQS_TARGET_DONE, 1, &rec, 1u);
}

/* Little-endian fields of received frames, read byte by byte (no alignment needed). */
MCUPROF_NOINSTR static uint32_t get_le(const uint8_t *p, uint32_t size)
{
    uint32_t v = 0u;
    while (size-- > 0u) {
        v = (v << 8) | p[size];
    }
    return v;
}

MCUPROF_NOINSTR static void *get_ptr(const uint8_t *p)
{
    uintptr_t v = 0u;
    uint32_t i = PTR_SIZE;
    while (i-- > 0u) {
        v = (v << 8) | p[i];
    }
    return (void *)v;
}

/* PEEK, POKE and FILL: offset u16, element size (1, 2, 4), count, then POKE's data or
 * FILL's one value, all relative to the current AP object. Elements are copied as
 * bytes: the target is little-endian, as its target info says. */
MCUPROF_NOINSTR static int rx_memory(uint8_t rec, const uint8_t *data, uint32_t len)
{
    uint8_t d[MCUQS_MAX_DATA];
    uint8_t *ap = (uint8_t *)g_curr[MCUQS_OBJ_AP];
    uint32_t size = len >= 4u ? data[2] : 0u;
    uint32_t bytes = size * (len >= 4u ? data[3] : 0u);
    uint32_t i;
    if (ap == 0 || (size != 1u && size != 2u && size != 4u) || bytes == 0u) {
        return 0;
    }
    ap += get_le(data, 2u);
    if (rec == MCUQS_RX_PEEK) {
        if (len != 4u || bytes > MCUQS_PEEK_MAX) {
            return 0; /* the answer must fit one record */
        }
        for (i = 0u; i < 4u; i++) {
            d[i] = data[i];
        }
        for (i = 0u; i < bytes; i++) {
            d[4u + i] = ap[i];
        }
        put_record(MCUQS_PEEK_DATA, 1, d, 4u + bytes);
        return 1;
    }
    if (len != 4u + (rec == MCUQS_RX_POKE ? bytes : size)) {
        return 0;
    }
    ack(rec);
    for (i = 0u; i < bytes; i++) {
        ap[i] = rec == MCUQS_RX_POKE ? data[4u + i] : data[4u + i % size];
    }
    return 1;
}

MCUPROF_NOINSTR static void loc_changed(void)
{
    uint32_t i;
    uint8_t all = 0xFFu;
    g_loc[0] |= 1u; /* QS-ID 0 is always on */
    for (i = 0u; i < sizeof g_loc; i++) {
        all &= g_loc[i];
    }
    g_loc_all = all == 0xFFu;
}

/* GLB_FILTER and LOC_FILTER: a length byte, then that many bytes of bitmap. */
MCUPROF_NOINSTR static int rx_filter(uint8_t rec, const uint8_t *data, uint32_t len)
{
    uint8_t *mask = rec == MCUQS_RX_GLB_FILTER ? g_filter : g_loc;
    uint32_t i;
    if (len < 1u || data[0] > 16u || len != 1u + data[0]) {
        return 0;
    }
    for (i = 0u; i < data[0]; i++) {
        mask[i] = data[1u + i];
    }
    loc_changed();
    ack(rec);
    return 1;
}

/* AO_FILTER (remove flag, object) and CURR_OBJ (kind, object). */
MCUPROF_NOINSTR static int rx_object(uint8_t rec, const uint8_t *data, uint32_t len)
{
    void *obj = len == 1u + PTR_SIZE ? get_ptr(&data[1]) : 0;
    if (len != 1u + PTR_SIZE) {
        return 0;
    }
    if (rec == MCUQS_RX_AO_FILTER) {
        uint8_t id = obj != 0 ? qs_id(obj) : 0u;
        uint8_t bit = (uint8_t)(1u << (id & 7u));
        if (id == 0u || data[0] > 1u) {
            return 0;
        }
        if (data[0] == 0u) {
            g_loc[id >> 3] |= bit;
        } else {
            g_loc[id >> 3] &= (uint8_t)~bit;
        }
        loc_changed();
    } else if (data[0] < MCUQS_OBJ_KINDS) {
        g_curr[data[0]] = obj;
    } else if (data[0] == MCUQS_OBJ_SM_AO) {
        g_curr[MCUQS_OBJ_SM] = g_curr[MCUQS_OBJ_AO] = obj;
    } else {
        return 0;
    }
    ack(rec);
    return 1;
}

/* QUERY_CURR: QS_QUERY_DATA with the kind, the object and what the application says. */
MCUPROF_NOINSTR static int rx_query(const uint8_t *data, uint32_t len)
{
    uint8_t d[MCUQS_MAX_DATA];
    const mcuqs_config_t *c = g_config;
    uint8_t kind = len == 1u ? data[0] : MCUQS_OBJ_KINDS;
    void *obj = kind < MCUQS_OBJ_KINDS ? g_curr[kind] : 0;
    uint32_t n;
    int extra = 0;
    if (obj == 0) {
        return 0;
    }
    d[0] = kind;
    n = pack_ptr(d, 1u, OBJ(obj));
    if (kind != MCUQS_OBJ_AP) {
        extra = c->on_query != 0 ? c->on_query(kind, obj, &d[n]) : -1;
        if (extra < 0 || n + (uint32_t)extra > MCUQS_MAX_DATA - 4u) {
            return 0;
        }
    }
    put_record(MCUQS_QUERY_DATA, 1, d, n + (uint32_t)extra);
    return 1;
}

/* COMMAND and EVENT go to the application: acknowledged first, then done when it has
 * run (an event's records, such as its post, come between). */
MCUPROF_NOINSTR static int rx_app(uint8_t rec, const uint8_t *data, uint32_t len)
{
    const mcuqs_config_t *c = g_config;
    if (rec == MCUQS_RX_COMMAND) {
        if (c->on_command == 0 || len != 13u) {
            return 0;
        }
        ack(rec);
        c->on_command(data[0], get_le(&data[1], 4u), get_le(&data[5], 4u),
                      get_le(&data[9], 4u));
    } else {
        uint16_t n = (uint16_t)(len >= 5u ? get_le(&data[3], 2u) : 0u);
        if (c->on_event == 0 || len < 5u || len != 5u + n) {
            return 0;
        }
        ack(rec);
        if (c->on_event(data[0], (uint16_t)get_le(&data[1], 2u), &data[5], n,
                        g_curr[MCUQS_OBJ_SM], g_curr[MCUQS_OBJ_AO]) != 0u) {
            return 0;
        }
    }
    done(rec);
    return 1;
}

/* One good frame: 1 when it was answered, 0 when it is refused (Trg-ERR). */
MCUPROF_NOINSTR static int rx_command(uint8_t rec, const uint8_t *data, uint32_t len)
{
    const mcuqs_config_t *c = g_config;
    switch (rec) {
    case MCUQS_RX_INFO: /* answered by the target info alone, as QP/C 7.4 does */
        mcuqs_target_info(0u);
        return 1;
    case MCUQS_RX_RESET:
        if (c->on_reset == 0) {
            return 0;
        }
        c->on_reset(); /* does not return on a real reset */
        return 1;
    case MCUQS_RX_TICK:
        if (c->on_tick == 0 || len != 1u) {
            return 0;
        }
        ack(rec);
        c->on_tick(data[0]);
        done(rec);
        return 1;
    case MCUQS_RX_PEEK:
    case MCUQS_RX_POKE:
    case MCUQS_RX_FILL:
        return rx_memory(rec, data, len);
    case MCUQS_RX_GLB_FILTER:
    case MCUQS_RX_LOC_FILTER:
        return rx_filter(rec, data, len);
    case MCUQS_RX_AO_FILTER:
    case MCUQS_RX_CURR_OBJ:
        return rx_object(rec, data, len);
    case MCUQS_RX_QUERY_CURR:
        return rx_query(data, len);
    case MCUQS_RX_COMMAND:
    case MCUQS_RX_EVENT:
        return rx_app(rec, data, len);
    default:
        return 0;
    }
}

MCUPROF_NOINSTR static void rx_frame(uint8_t rec, const uint8_t *data, uint32_t len)
{
    if (!rx_command(rec, data, len)) {
        ack((uint8_t)(0x80u | rec));
    }
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

void mcuqs_rx_feed(const uint8_t *data, uint32_t len)
{
    uint32_t i;
    for (i = 0u; i < len; i++) {
        rx_byte(data[i]);
    }
}

uint32_t mcuqs_poll(uint32_t max_bytes)
{
    uint32_t sent = 0u;
    int c;
    while ((c = mcuprof_port_getc()) >= 0) {
        uint8_t b = (uint8_t)c;
        mcuqs_rx_feed(&b, 1u);
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
