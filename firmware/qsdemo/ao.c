/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* The demo's active-object framework. Every queue, pool and state-machine step
 * is traced with mcuqs, in the order QP traces the same steps, so the host's RTC,
 * queue and pool views see what they would see from a QP application. */
#include "ao.h"
#include "mcuprof_port.h"

#define MAX_DEPTH 4
#define MAX_AOS 4u
#define MAX_TIME_EVTS 4u
#define ENTER() mcuprof_port_critical_enter()
#define EXIT(key) mcuprof_port_critical_exit(key)
#define FUN(s) ((mcuqs_fun_t)(s))

typedef struct {
    union {
        evt_t evt;
        uint32_t align[EVT_BLOCK / 4u];
    } block[POOL_BLOCKS];
    uint8_t free_idx[POOL_BLOCKS];
    uint8_t nfree, nmin;
} pool_t;

static pool_t EvtPool;
static const uint8_t l_clock_tick_obj = 0u;
const void *const l_pool = &EvtPool;
const void *const l_tick = &l_clock_tick_obj;

static const evt_t reserved[4] = {{SIG_EMPTY, 0u, 0u}, {SIG_ENTRY, 0u, 0u},
                                  {SIG_EXIT, 0u, 0u}, {SIG_INIT, 0u, 0u}};
static time_evt_t *time_evts[MAX_TIME_EVTS];
static uint32_t n_time_evts;
static uint32_t tick_ctr;
static ao_t *const *g_aos;
static uint32_t g_n_aos;

int ao_top(ao_t *me, const evt_t *e)
{
    (void)me;
    (void)e;
    return RET_IGNORED;
}

/* ------------------------------------------------------------------ pool */

void ao_init(void)
{
    uint8_t i;
    for (i = 0u; i < POOL_BLOCKS; i++) {
        EvtPool.free_idx[i] = i;
    }
    EvtPool.nfree = EvtPool.nmin = POOL_BLOCKS;
    (void)mcuqs_obj_id(&EvtPool, POOL_QS_ID);
}

evt_t *evt_new(uint16_t size, uint16_t sig)
{
    evt_t *e = 0;
    uint32_t key;
    if (size > EVT_BLOCK) {
        return 0;
    }
    key = ENTER();
    if (EvtPool.nfree != 0u) {
        EvtPool.nfree--;
        e = &EvtPool.block[EvtPool.free_idx[EvtPool.nfree]].evt;
        if (EvtPool.nfree < EvtPool.nmin) {
            EvtPool.nmin = EvtPool.nfree;
        }
        mcuqs_pool(MCUQS_MPOOL_GET, &EvtPool, EvtPool.nfree, EvtPool.nmin);
        mcuqs_new(size, sig);
        e->sig = sig;
        e->pool = 1u;
        e->ref = 0u;
    }
    EXIT(key);
    return e;
}

void evt_gc(const evt_t *e)
{
    uint32_t key;
    evt_t *m;
    if (e->pool == 0u) {
        return;
    }
    key = ENTER();
    m = (evt_t *)(uintptr_t)e; /* pool events are the pool's own, writable blocks */
    if (m->ref > 1u) {
        m->ref--;
    } else {
        uint8_t idx =
            (uint8_t)(((uintptr_t)m - (uintptr_t)&EvtPool.block[0]) / sizeof EvtPool.block[0]);
        mcuqs_gc(m->sig, m->pool, m->ref);
        EvtPool.free_idx[EvtPool.nfree++] = idx;
        mcuqs_pool(MCUQS_MPOOL_PUT, &EvtPool, EvtPool.nfree, 0u);
    }
    EXIT(key);
}

/* ------------------------------------------------------------------ queues */

int ao_post(ao_t *me, const evt_t *e, const void *sender)
{
    uint32_t key = ENTER();
    uint8_t free;
    if (me->nused == me->qlen) {
        EXIT(key);
        if (e->ref == 0u) {
            evt_gc(e);
        }
        return 0;
    }
    if (e->pool != 0u) {
        ((evt_t *)(uintptr_t)e)->ref++;
    }
    me->queue[me->head] = e;
    me->head = (uint8_t)((me->head + 1u) % me->qlen);
    me->nused++;
    free = (uint8_t)(me->qlen - me->nused);
    if (free < me->nmin_free) {
        me->nmin_free = free;
    }
    mcuqs_post(sender, e->sig, me, e->pool, e->ref, free, me->nmin_free);
    EXIT(key);
    return 1;
}

static const evt_t *ao_get(ao_t *me)
{
    const evt_t *e = me->queue[me->tail];
    me->tail = (uint8_t)((me->tail + 1u) % me->qlen);
    me->nused--;
    mcuqs_get(e->sig, me, e->pool, e->ref, (uint8_t)(me->qlen - me->nused), me->nused == 0u);
    return e;
}

/* ------------------------------------------------------------ state machines */

static state_t super_of(ao_t *me, state_t s)
{
    (void)s(me, &reserved[SIG_EMPTY]);
    return me->next;
}

/* s, its superstate, ..., ao_top; returns how many. */
static int ancestors(ao_t *me, state_t s, state_t *path)
{
    int n = 0;
    path[n++] = s;
    while (s != ao_top && n < MAX_DEPTH) {
        s = super_of(me, s);
        path[n++] = s;
    }
    return n;
}

static void enter(ao_t *me, state_t s)
{
    if (s(me, &reserved[SIG_ENTRY]) == RET_HANDLED) {
        mcuqs_state(MCUQS_STATE_ENTRY, me, FUN(s));
    }
}

static void leave(ao_t *me, state_t s)
{
    if (s(me, &reserved[SIG_EXIT]) == RET_HANDLED) {
        mcuqs_state(MCUQS_STATE_EXIT, me, FUN(s));
    }
}

/* Follows initial transitions down from t; returns the new leaf state. */
static state_t drill(ao_t *me, state_t t)
{
    state_t path[MAX_DEPTH];
    while (t(me, &reserved[SIG_INIT]) == RET_TRAN) {
        state_t sub = me->next;
        int n = 0;
        state_t s = sub;
        mcuqs_init_tran(me, FUN(t), FUN(sub));
        while (s != t && n < MAX_DEPTH) {
            path[n++] = s;
            s = super_of(me, s);
        }
        while (n > 0) {
            enter(me, path[--n]);
        }
        t = sub;
    }
    return t;
}

/* An external transition from source s (the state that handled the event) to t:
 * exit up to the least common ancestor, enter down to t, then t's initial path. */
static void transition(ao_t *me, state_t s, state_t t)
{
    state_t a[MAX_DEPTH], b[MAX_DEPTH], cur;
    int na, nb, i, j, k;
    for (cur = me->state; cur != s && cur != ao_top; cur = super_of(me, cur)) {
        leave(me, cur);
    }
    na = ancestors(me, s, a);
    nb = ancestors(me, t, b);
    for (i = 1; i < na; i++) {
        for (j = 1; j < nb; j++) {
            if (a[i] == b[j]) {
                goto found;
            }
        }
    }
    i = na - 1; /* unreachable: ao_top is everyone's ancestor */
    j = nb - 1;
found:
    for (k = 0; k < i; k++) {
        leave(me, a[k]);
    }
    for (k = j - 1; k >= 0; k--) {
        enter(me, b[k]);
    }
    me->state = drill(me, t);
}

static void dispatch(ao_t *me, const evt_t *e)
{
    state_t s = me->state;
    int r;
    mcuqs_sm(MCUQS_DISPATCH, e->sig, me, FUN(s));
    for (;;) {
        r = s(me, e);
        if (r == RET_UNHANDLED) { /* a guard said no: the superstate gets a chance */
            mcuqs_sm(MCUQS_UNHANDLED, e->sig, me, FUN(s));
            r = s(me, &reserved[SIG_EMPTY]);
        }
        if (r != RET_SUPER) {
            break;
        }
        s = me->next;
    }
    if (r == RET_HANDLED) {
        mcuqs_sm(MCUQS_INTERN_TRAN, e->sig, me, FUN(s));
    } else if (r == RET_TRAN) {
        transition(me, s, me->next);
        mcuqs_tran(e->sig, me, FUN(s), FUN(me->state));
    } else {
        mcuqs_sm(MCUQS_IGNORED, e->sig, me, FUN(me->state));
    }
}

void ao_ctor(ao_t *me, state_t initial, uint8_t prio, uint8_t qlen)
{
    me->state = initial; /* the top-most initial transition's target */
    me->prio = prio;
    me->qlen = qlen <= AO_QUEUE_MAX ? qlen : (uint8_t)AO_QUEUE_MAX;
    me->head = me->tail = me->nused = 0u;
    me->nmin_free = me->qlen;
    (void)mcuqs_obj_id(me, prio); /* QP's QS-ID of an active object is its priority */
}

void ao_start(ao_t *me)
{
    state_t a[MAX_DEPTH];
    state_t t = me->state;
    int k = ancestors(me, t, a) - 2; /* a[k + 1] is ao_top */
    mcuqs_init_tran(me, FUN(ao_top), FUN(t));
    for (; k >= 0; k--) {
        enter(me, a[k]);
    }
    me->state = drill(me, t);
    mcuqs_top_init(me, FUN(me->state));
}

/* ------------------------------------------------------------------ time */

void te_ctor(time_evt_t *te, ao_t *ao, uint16_t sig)
{
    te->ao = ao;
    te->evt.sig = sig;
    te->evt.pool = 0u;
    te->evt.ref = 0u;
    te->ctr = te->interval = 0u;
    if (n_time_evts < MAX_TIME_EVTS) {
        time_evts[n_time_evts++] = te;
    }
}

void te_arm(time_evt_t *te, uint16_t ticks, uint16_t interval)
{
    uint32_t key = ENTER();
    te->ctr = ticks;
    te->interval = interval;
    mcuqs_te_arm(te, te->ao, ticks, interval, 0u);
    EXIT(key);
}

void ao_tick(const void *sender)
{
    uint32_t i;
    uint32_t key = ENTER();
    tick_ctr++;
    mcuqs_tick(tick_ctr, 0u);
    for (i = 0u; i < n_time_evts; i++) {
        time_evt_t *te = time_evts[i];
        if (te->ctr != 0u && --te->ctr == 0u) {
            te->ctr = te->interval;
            mcuqs_te_post(te, te->evt.sig, te->ao, 0u);
            (void)ao_post(te->ao, &te->evt, sender);
        }
    }
    EXIT(key);
}

/* ------------------------------------------------------------------ scheduler */

int ao_ready(void)
{
    uint32_t i;
    for (i = 0u; i < g_n_aos; i++) {
        if (g_aos[i]->nused != 0u) {
            return 1;
        }
    }
    return 0;
}

void ao_run(ao_t *const *aos, uint32_t n, void (*idle)(void))
{
    g_aos = aos;
    g_n_aos = n;
    for (;;) {
        uint32_t key = ENTER();
        ao_t *best = 0;
        uint32_t i;
        for (i = 0u; i < n; i++) {
            if (aos[i]->nused != 0u && (best == 0 || aos[i]->prio > best->prio)) {
                best = aos[i];
            }
        }
        if (best != 0) {
            const evt_t *e = ao_get(best);
            EXIT(key);
            dispatch(best, e);
            evt_gc(e);
        } else {
            EXIT(key);
            idle();
        }
    }
}

/* ------------------------------------------------------------------ QS-RX */

void ao_dispatch(ao_t *me, const evt_t *e)
{
    if (e->pool != 0u) {
        ((evt_t *)(uintptr_t)e)->ref++; /* as if taken from a queue */
    }
    dispatch(me, e);
    evt_gc(e);
}

void ao_publish(const evt_t *e, const void *sender)
{
    uint32_t i;
    if (e->pool != 0u) {
        ((evt_t *)(uintptr_t)e)->ref++; /* held until every object has it */
    }
    for (i = 0u; i < g_n_aos; i++) {
        (void)ao_post(g_aos[i], e, sender);
    }
    evt_gc(e);
}

ao_t *ao_by_prio(uint8_t prio)
{
    uint32_t i;
    for (i = 0u; i < g_n_aos; i++) {
        if (g_aos[i]->prio == prio) {
            return g_aos[i];
        }
    }
    return 0;
}

static uint32_t put(uint8_t *out, uint32_t n, uintptr_t v, uint32_t size)
{
    uint32_t i;
    for (i = 0u; i < size; i++) {
        out[n + i] = (uint8_t)(v >> (8u * i));
    }
    return n + size;
}

static ao_t *find_ao(const void *obj)
{
    uint32_t i;
    for (i = 0u; i < g_n_aos; i++) {
        if (g_aos[i] == obj) {
            return g_aos[i];
        }
    }
    return 0;
}

static const time_evt_t *find_te(const void *obj)
{
    uint32_t i;
    for (i = 0u; i < n_time_evts; i++) {
        if (time_evts[i] == obj) {
            return time_evts[i];
        }
    }
    return 0;
}

int ao_query(uint8_t kind, const void *obj, uint8_t *out)
{
    const ao_t *a = find_ao(obj);
    const time_evt_t *te = find_te(obj);
    uint32_t n;
    if ((kind == MCUQS_OBJ_SM || kind == MCUQS_OBJ_AO) && a != 0) {
        return (int)put(out, 0u, (uintptr_t)a->state, sizeof(void *));
    }
    if (kind == MCUQS_OBJ_EQ && a != 0) {
        return (int)put(out, put(out, 0u, (uint8_t)(a->qlen - a->nused), 1u), a->nmin_free, 1u);
    }
    if (kind == MCUQS_OBJ_MP && obj == &EvtPool) {
        return (int)put(out, put(out, 0u, EvtPool.nfree, 2u), EvtPool.nmin, 2u);
    }
    if (kind == MCUQS_OBJ_TE && te != 0) {
        n = put(out, 0u, (uintptr_t)te->ao, sizeof(void *));
        n = put(out, n, te->ctr, 4u);
        n = put(out, n, te->interval, 4u);
        n = put(out, n, te->evt.sig, 2u);
        return (int)put(out, n, te->ctr != 0u ? 0x80u : 0u, 1u); /* rate 0; armed */
    }
    return -1;
}
