/*
 * mcuqs: a minimal QP/Spy (QS) compatible trace encoder, written for mcuprof.
 * Same MIT licence as mcuprof.h. Not QP's code: the wire format follows the
 * QP/Spy data-protocol description (HDLC-like frames, checksum, sequence numbers,
 * little-endian fields) and QP/C 7.4's record layouts as QSPY 7.4 reads them.
 *
 * How to use it:
 *   1. Implement the five functions of mcuprof_port.h (the same port as the
 *      MiniProfiler library; only time, putc, getc and the critical section are used).
 *   2. mcuqs_init(&config) once at boot: it sends QS_EMPTY and QS_TARGET_INFO.
 *      Then send your dictionaries (MCUQS_OBJ_DICT, MCUQS_FUN_DICT, ...).
 *   3. Record with mcuqs_record() or the helpers below, from any context including
 *      interrupts: each record is copied into the trace buffer, raw, inside one short
 *      critical section.
 *   4. Call mcuqs_poll() from the idle loop: it frames buffered records (checksum,
 *      escapes, flag), sends them while the transmitter takes bytes, and handles
 *      QS-RX commands from the host.
 *
 * Sizes this encoder puts on the wire (and announces in QS_TARGET_INFO): signal 2,
 * event size 2, queue counter 1, time-event counter 4, pool block size 2, pool
 * counter 2, object and function pointers sizeof(void *), timestamp 4 bytes. On a
 * 32-bit target these are QSPY's defaults, so a host that joins mid-stream (and so
 * missed target info) still reads every record's layout right.
 *
 * C99, no dynamic memory, no libc calls.
 */
#ifndef MCUQS_H
#define MCUQS_H

#include <stdint.h>

#include "mcuprof.h" /* MCUPROF_NOINSTR */

#ifdef __cplusplus
extern "C" {
#endif

/* Trace buffer in bytes (power of two). A record takes 1 + 2 + 4 (timestamp) + data
 * bytes; when the buffer is full the oldest whole records go (last is best) and
 * mcuqs_lost_frames() counts them. */
#ifndef MCUQS_BUF_SIZE
#define MCUQS_BUF_SIZE 2048u
#endif
/* Largest data part of one record (after the record id, before the checksum). */
#define MCUQS_MAX_DATA 64u
/* QS-RX: largest data part of one received frame (a longer frame is refused and
 * counted by mcuqs_rx_bad_frames()). 64 holds a POKE of 60 bytes and an EVENT with
 * 59 parameter bytes. */
#ifndef MCUQS_RX_MAX
#define MCUQS_RX_MAX 64u
#endif
/* QS-RX PEEK: most bytes one answer carries (a QS_PEEK_DATA record: timestamp, offset,
 * size and count, then the data, in MCUQS_MAX_DATA bytes); a larger peek is refused. */
#define MCUQS_PEEK_MAX (MCUQS_MAX_DATA - 8u)
/* Objects whose QS-ID (for local filters and the AO filter) mcuqs_obj_id() can set. */
#ifndef MCUQS_MAX_IDS
#define MCUQS_MAX_IDS 16u
#endif

/* QP 7.4 predefined record ids used here. */
enum {
    MCUQS_EMPTY = 0,
    MCUQS_STATE_ENTRY = 1,
    MCUQS_STATE_EXIT = 2,
    MCUQS_STATE_INIT = 3,
    MCUQS_INIT_TRAN = 4,
    MCUQS_INTERN_TRAN = 5,
    MCUQS_TRAN = 6,
    MCUQS_IGNORED = 7,
    MCUQS_DISPATCH = 8,
    MCUQS_UNHANDLED = 9,
    MCUQS_ACTIVE_POST = 14,
    MCUQS_ACTIVE_GET = 16,
    MCUQS_ACTIVE_GET_LAST = 17,
    MCUQS_MPOOL_GET = 24,
    MCUQS_MPOOL_PUT = 25,
    MCUQS_QF_NEW = 28,
    MCUQS_QF_GC = 30,
    MCUQS_QF_TICK = 31,
    MCUQS_TIMEEVT_ARM = 32,
    MCUQS_TIMEEVT_POST = 37,
    MCUQS_SIG_DICT = 60,
    MCUQS_OBJ_DICT = 61,
    MCUQS_FUN_DICT = 62,
    MCUQS_USR_DICT = 63,
    MCUQS_TARGET_INFO = 64,
    MCUQS_TARGET_DONE = 65,
    MCUQS_RX_STATUS = 66,
    MCUQS_QUERY_DATA = 67,
    MCUQS_PEEK_DATA = 68,
    MCUQS_QF_RUN = 70,
    MCUQS_USER = 100 /* first application record id */
};

/* QS-RX record ids the host sends (QSPY's numbering) that mcuqs handles. */
enum {
    MCUQS_RX_INFO = 0,
    MCUQS_RX_COMMAND = 1,
    MCUQS_RX_RESET = 2,
    MCUQS_RX_TICK = 3,
    MCUQS_RX_PEEK = 4,
    MCUQS_RX_POKE = 5,
    MCUQS_RX_FILL = 6,
    MCUQS_RX_GLB_FILTER = 10,
    MCUQS_RX_LOC_FILTER = 11,
    MCUQS_RX_AO_FILTER = 12,
    MCUQS_RX_CURR_OBJ = 13,
    MCUQS_RX_QUERY_CURR = 15,
    MCUQS_RX_EVENT = 16
};

/* Current-object kinds of CURR_OBJ and QUERY_CURR (QP's order); SM_AO sets both. */
enum {
    MCUQS_OBJ_SM = 0,
    MCUQS_OBJ_AO = 1,
    MCUQS_OBJ_MP = 2,
    MCUQS_OBJ_EQ = 3,
    MCUQS_OBJ_TE = 4,
    MCUQS_OBJ_AP = 5,
    MCUQS_OBJ_SM_AO = 6,
    MCUQS_OBJ_KINDS = 6
};

/* QS-RX EVENT targets: 0 publishes, 1..max_active posts to that priority. */
enum { MCUQS_EVT_POST_CURR = 253, MCUQS_EVT_INIT = 254, MCUQS_EVT_DISPATCH = 255 };

/* Format bytes of application-record elements: low nibble type, high nibble width. */
enum {
    MCUQS_FMT_I8 = 0,
    MCUQS_FMT_U8 = 1,
    MCUQS_FMT_I16 = 2,
    MCUQS_FMT_U16 = 3,
    MCUQS_FMT_I32 = 4,
    MCUQS_FMT_U32 = 5,
    MCUQS_FMT_STR = 8,
    MCUQS_FMT_OBJ = 11
};

typedef void (*mcuqs_fun_t)(void);

typedef struct {
    uint8_t build[6];         /* build time: seconds, minutes, hours, day, month, year % 100 */
    uint8_t max_active;       /* QF_MAX_ACTIVE reported in target info */
    uint8_t max_epool;        /* number of event pools */
    uint8_t max_tick_rate;    /* number of tick rates */
    void (*on_reset)(void);   /* QS-RX RESET (NULL: the command is refused) */
    void (*on_tick)(uint8_t rate); /* QS-RX TICK (NULL: refused) */
    /* QS-RX COMMAND: the application's command (NULL: refused). */
    void (*on_command)(uint8_t id, uint32_t p1, uint32_t p2, uint32_t p3);
    /* QS-RX EVENT: `target` is 0 (publish), a priority (post), MCUQS_EVT_POST_CURR
     * (post to `ao`), MCUQS_EVT_INIT or MCUQS_EVT_DISPATCH (to `sm`); `ao` and `sm` are
     * the current objects (may be NULL). Returns 0 when done; anything else is reported
     * as Trg-ERR QS_RX_EVENT. NULL: refused. */
    uint8_t (*on_event)(uint8_t target, uint16_t sig, const uint8_t *params, uint16_t len,
                        void *sm, void *ao);
    /* QS-RX QUERY_CURR: writes the kind-specific part of QS_QUERY_DATA for `obj` (SM/AO:
     * state handler; MP: free, min (2 bytes each); EQ: free, min (1 byte each); TE: ao,
     * counter, interval (4 bytes each), signal (2), flags (1)) into `out` (room for
     * MCUQS_MAX_DATA - 5 - pointer bytes), returns its length, or -1 when `obj` is not
     * of that kind. NULL: only AP queries are answered. */
    int (*on_query)(uint8_t kind, const void *obj, uint8_t *out);
} mcuqs_config_t;

/* An application record being built: format bytes and values, then mcuqs_user(). */
typedef struct {
    uint8_t len;
    uint8_t data[MCUQS_MAX_DATA];
} mcuqs_args_t;

void mcuqs_init(const mcuqs_config_t *config) MCUPROF_NOINSTR;
/* Sends buffered bytes while the transmitter accepts them (at most max_bytes, 0 = no
 * limit) and handles received QS-RX frames. Returns the bytes sent. */
uint32_t mcuqs_poll(uint32_t max_bytes) MCUPROF_NOINSTR;
/* Bytes waiting in the trace buffer and the frame being sent (0: all sent). */
uint32_t mcuqs_pending(void) MCUPROF_NOINSTR;
/* Records dropped because the buffer was full (the host sees sequence gaps). */
uint32_t mcuqs_lost_frames(void) MCUPROF_NOINSTR;
uint32_t mcuqs_rx_bad_frames(void) MCUPROF_NOINSTR;

/* QS-RX bytes from the host (sans IO: mcuqs_poll() feeds what the port's getc gives).
 * Frames are HDLC-like as the host sends them: seq, record id, data, checksum, flag. */
void mcuqs_rx_feed(const uint8_t *data, uint32_t len) MCUPROF_NOINSTR;

/* The QS-ID of an object (QP: an active object's priority 1..64, pools 65..80, queues
 * 81..96, application 97..127). Records about the object (state machine, queue, pool,
 * time event) then pass the local filter only while its QS-ID is on; objects never
 * named here have QS-ID 0, always on. May be called before mcuqs_init(), which keeps
 * the table. The AO filter finds objects here. Returns 0
 * when the table (MCUQS_MAX_IDS) is full, else 1. */
int mcuqs_obj_id(const void *obj, uint8_t id) MCUPROF_NOINSTR;
/* Local filter: one bit per QS-ID, all on at boot; QS-ID 0 is always on. */
int mcuqs_loc_enabled(uint8_t id) MCUPROF_NOINSTR;

/* Global filter: one bit per record id, all on at boot. QS_EMPTY, the dictionaries, target
 * info, QS_TARGET_DONE, QS_RX_STATUS and QS_QF_RUN (0, 60-66, 70) are never filtered. */
void mcuqs_filter(uint8_t rec, int on) MCUPROF_NOINSTR;
int mcuqs_enabled(uint8_t rec) MCUPROF_NOINSTR;

/* The core: one frame with an optional timestamp (read inside the critical section,
 * right after the record id) and `len` data bytes. Dropped when filtered out. */
void mcuqs_record(uint8_t rec, int stamped, const uint8_t *data, uint32_t len) MCUPROF_NOINSTR;
void mcuqs_target_info(uint8_t is_reset) MCUPROF_NOINSTR;

/* Dictionaries (no timestamp, never filtered). */
void mcuqs_obj_dict(const void *obj, const char *name) MCUPROF_NOINSTR;
void mcuqs_fun_dict(mcuqs_fun_t fun, const char *name) MCUPROF_NOINSTR;
void mcuqs_sig_dict(uint16_t sig, const void *obj, const char *name) MCUPROF_NOINSTR;
void mcuqs_usr_dict(uint8_t rec, const char *name) MCUPROF_NOINSTR;
#define MCUQS_OBJ_DICT(obj) mcuqs_obj_dict((obj), #obj)
#define MCUQS_FUN_DICT(fun) mcuqs_fun_dict((mcuqs_fun_t)(fun), #fun)
#define MCUQS_SIG_DICT(sig, obj) mcuqs_sig_dict((sig), (obj), #sig)
#define MCUQS_USR_DICT(rec) mcuqs_usr_dict((rec), #rec)

/* State-machine records. `rec` is one of: INTERN_TRAN, IGNORED, DISPATCH (ts sig obj
 * state); UNHANDLED (sig obj state, no timestamp). */
void mcuqs_sm(uint8_t rec, uint16_t sig, const void *obj, mcuqs_fun_t state) MCUPROF_NOINSTR;
/* ENTRY, EXIT (obj state). */
void mcuqs_state(uint8_t rec, const void *obj, mcuqs_fun_t state) MCUPROF_NOINSTR;
/* TRAN (ts sig obj source target). */
void mcuqs_tran(uint16_t sig, const void *obj, mcuqs_fun_t source, mcuqs_fun_t target)
    MCUPROF_NOINSTR;
/* STATE_INIT (obj source target), INIT_TRAN (ts obj state). */
void mcuqs_init_tran(const void *obj, mcuqs_fun_t source, mcuqs_fun_t target) MCUPROF_NOINSTR;
void mcuqs_top_init(const void *obj, mcuqs_fun_t state) MCUPROF_NOINSTR;

/* Active objects, pools, time events. */
void mcuqs_post(const void *sender, uint16_t sig, const void *ao, uint8_t pool, uint8_t ref,
                uint8_t free, uint8_t min) MCUPROF_NOINSTR;
/* GET (free entries left) or, when the queue is now empty, GET_LAST. */
void mcuqs_get(uint16_t sig, const void *ao, uint8_t pool, uint8_t ref, uint8_t free,
               int last) MCUPROF_NOINSTR;
void mcuqs_pool(uint8_t rec, const void *pool, uint16_t free, uint16_t min) MCUPROF_NOINSTR;
void mcuqs_new(uint16_t size, uint16_t sig) MCUPROF_NOINSTR;
void mcuqs_gc(uint16_t sig, uint8_t pool, uint8_t ref) MCUPROF_NOINSTR;
void mcuqs_tick(uint32_t ctr, uint8_t rate) MCUPROF_NOINSTR;
void mcuqs_te_arm(const void *te, const void *ao, uint32_t ctr, uint32_t interval, uint8_t rate)
    MCUPROF_NOINSTR;
void mcuqs_te_post(const void *te, uint16_t sig, const void *ao, uint8_t rate) MCUPROF_NOINSTR;
void mcuqs_qf_run(void) MCUPROF_NOINSTR;

/* Application records: mcuqs_args_init, then elements, then mcuqs_user(rec, &args).
 * `width` is the display width (0..15; 15 with unsigned types means hexadecimal). */
void mcuqs_args_init(mcuqs_args_t *a) MCUPROF_NOINSTR;
void mcuqs_arg_u8(mcuqs_args_t *a, uint8_t width, uint8_t v) MCUPROF_NOINSTR;
void mcuqs_arg_i16(mcuqs_args_t *a, uint8_t width, int16_t v) MCUPROF_NOINSTR;
void mcuqs_arg_u16(mcuqs_args_t *a, uint8_t width, uint16_t v) MCUPROF_NOINSTR;
void mcuqs_arg_i32(mcuqs_args_t *a, uint8_t width, int32_t v) MCUPROF_NOINSTR;
void mcuqs_arg_u32(mcuqs_args_t *a, uint8_t width, uint32_t v) MCUPROF_NOINSTR;
void mcuqs_arg_str(mcuqs_args_t *a, const char *s) MCUPROF_NOINSTR;
void mcuqs_arg_obj(mcuqs_args_t *a, const void *obj) MCUPROF_NOINSTR;
void mcuqs_user(uint8_t rec, const mcuqs_args_t *a) MCUPROF_NOINSTR;

#ifdef __cplusplus
}
#endif

#endif /* MCUQS_H */
