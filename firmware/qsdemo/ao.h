/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* A tiny active-object framework for the QS demo (our own, not QP): hierarchical
 * state machines, one event queue per active object, one event pool, time events
 * and a cooperative run-to-completion scheduler, all traced with mcuqs. */
#ifndef AO_H
#define AO_H

#include <stdint.h>

#include "mcuqs.h"

/* Signals the engine sends to state handlers itself. */
enum { SIG_EMPTY = 0, SIG_ENTRY = 1, SIG_EXIT = 2, SIG_INIT = 3, SIG_USER = 4 };

typedef struct {
    uint16_t sig;
    uint8_t pool; /* 0 = static event, 1 = from the event pool */
    uint8_t ref;  /* queues holding it */
} evt_t;

struct ao;
/* A state: returns one of the RET_ codes below (RET_SUPER / RET_TRAN after setting
 * me->next). Handlers are called with SIG_EMPTY only to learn their superstate. */
typedef int (*state_t)(struct ao *me, const evt_t *e);
enum { RET_HANDLED, RET_UNHANDLED, RET_IGNORED, RET_SUPER, RET_TRAN };
#define SUPER(s) (me->next = (state_t)(s), RET_SUPER)
#define TRAN(s) (me->next = (state_t)(s), RET_TRAN)

#define AO_QUEUE_MAX 8u

typedef struct ao {
    state_t state; /* current leaf state */
    state_t next;  /* superstate or transition target being returned */
    uint8_t prio;  /* 1.. ; higher runs first */
    uint8_t qlen;
    uint8_t head, tail, nused, nmin_free;
    const evt_t *queue[AO_QUEUE_MAX];
} ao_t;

typedef struct {
    ao_t *ao;
    evt_t evt; /* a static event: pool 0 */
    uint16_t ctr;
    uint16_t interval;
} time_evt_t;

int ao_top(ao_t *me, const evt_t *e);
/* Once at boot, before any event is allocated. */
void ao_init(void);

void ao_ctor(ao_t *me, state_t initial, uint8_t prio, uint8_t qlen);
void ao_start(ao_t *me);
/* Post from any context; `sender` is only traced. Returns 0 when the queue is full
 * (the event is then recycled). */
int ao_post(ao_t *me, const evt_t *e, const void *sender);

/* One run-to-completion step outside the scheduler (QS-RX dispatch): the event is
 * recycled afterwards, as after a step the scheduler ran. */
void ao_dispatch(ao_t *me, const evt_t *e);
/* Posts to every active object (the demo has no subscriptions: an object that does not
 * handle the signal ignores it). */
void ao_publish(const evt_t *e, const void *sender);
/* The active object of priority `prio`, or NULL. */
ao_t *ao_by_prio(uint8_t prio);
/* QS-RX QUERY_CURR for mcuqs (mcuqs_config_t.on_query): active objects (SM, AO, their
 * queues as EQ), the event pool (MP) and time events (TE). */
int ao_query(uint8_t kind, const void *obj, uint8_t *out);

/* Dynamic events: `size` bytes (header included), at most EVT_BLOCK. NULL when the
 * pool is empty. */
#define EVT_BLOCK 12u
#define POOL_BLOCKS 10u
#define POOL_QS_ID 65u /* QP's QS-ID of the first event pool */
evt_t *evt_new(uint16_t size, uint16_t sig);
void evt_gc(const evt_t *e);

void te_ctor(time_evt_t *te, ao_t *ao, uint16_t sig);
void te_arm(time_evt_t *te, uint16_t ticks, uint16_t interval);
/* The clock tick (rate 0): call from the tick interrupt. */
void ao_tick(const void *sender);

/* The scheduler: runs forever; the highest-priority active object with an event
 * runs one RTC step, and `idle` is called whenever every queue is empty. */
void ao_run(ao_t *const *aos, uint32_t n, void (*idle)(void));
/* Whether any queue holds an event (call with interrupts disabled before sleeping). */
int ao_ready(void);

extern const void *const l_pool;
extern const void *const l_tick;

#endif /* AO_H */
