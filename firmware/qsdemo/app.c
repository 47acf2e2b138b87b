/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* Three active objects:
 *   Blinky  blinking{off, on}: a periodic time event toggles the LED; RATE events
 *           from Button change the period (handled in `on` when the guard allows,
 *           else unhandled there and handled by `blinking`).
 *   Button  released / pressed: debounces PRESS/RELEASE from the tick ISR (a bounce
 *           PRESS while pressed is ignored) and posts RATE to Blinky from the pool.
 *   Monitor collecting: SAMPLE events from the "ADC DMA" (four per burst, from the
 *           pool) are summed; every WINDOW samples it sends a MON_STAT application
 *           record and takes a self-transition that starts a new window. */
#include "app.h"

#define WINDOW 10u

enum { TIMEOUT_SIG = SIG_USER, RATE_SIG, PRESS_SIG, RELEASE_SIG, SAMPLE_SIG };

typedef struct {
    evt_t super;
    uint16_t period;
} rate_evt_t;

typedef struct {
    evt_t super;
    int16_t value;
    uint32_t k; /* sample number */
} sample_evt_t;

typedef struct {
    ao_t super;
    time_evt_t te;
    uint16_t period;
    uint8_t led;
} blinky_t;

typedef struct {
    ao_t super;
    uint8_t presses;
} button_t;

typedef struct {
    ao_t super;
    uint32_t first_k;
    uint16_t count;
    int32_t sum;
    int16_t min, max;
} monitor_t;

static blinky_t l_blinky;
static button_t l_button;
static monitor_t l_monitor;
static const uint8_t l_qs_rx = 0u; /* the sender of QS-RX events */
static const uint16_t periods[] = {20u, 20u, 40u, 10u};
static const evt_t press_evt = {PRESS_SIG, 0u, 0u};
static const evt_t release_evt = {RELEASE_SIG, 0u, 0u};

static int blinky_blinking(ao_t *me, const evt_t *e);
static int blinky_off(ao_t *me, const evt_t *e);
static int blinky_on(ao_t *me, const evt_t *e);
static int button_released(ao_t *me, const evt_t *e);
static int button_pressed(ao_t *me, const evt_t *e);
static int monitor_collecting(ao_t *me, const evt_t *e);

int16_t sample_value(uint32_t k)
{
    uint32_t phase = (k * 37u) & 0x3FFu;
    int32_t tri = phase < 512u ? (int32_t)phase : (int32_t)(1023u - phase);
    return (int16_t)(tri - 256);
}

/* ------------------------------------------------------------------ Blinky */

static int blinky_blinking(ao_t *me, const evt_t *e)
{
    blinky_t *b = (blinky_t *)me;
    switch (e->sig) {
    case SIG_ENTRY:
        te_arm(&b->te, b->period, b->period);
        return RET_HANDLED;
    case SIG_INIT:
        return TRAN(blinky_off);
    case RATE_SIG:
        b->period = ((const rate_evt_t *)e)->period;
        te_arm(&b->te, b->period, b->period);
        return RET_HANDLED;
    default:
        return SUPER(ao_top);
    }
}

static int blinky_off(ao_t *me, const evt_t *e)
{
    blinky_t *b = (blinky_t *)me;
    switch (e->sig) {
    case SIG_ENTRY:
        b->led = 0u;
        return RET_HANDLED;
    case TIMEOUT_SIG:
        return TRAN(blinky_on);
    default:
        return SUPER(blinky_blinking);
    }
}

static int blinky_on(ao_t *me, const evt_t *e)
{
    blinky_t *b = (blinky_t *)me;
    switch (e->sig) {
    case SIG_ENTRY:
        b->led = 1u;
        return RET_HANDLED;
    case SIG_EXIT:
        b->led = 0u;
        return RET_HANDLED;
    case TIMEOUT_SIG:
        return TRAN(blinky_off);
    case RATE_SIG:
        if (((const rate_evt_t *)e)->period == b->period) {
            return RET_HANDLED; /* same period: nothing to re-arm */
        }
        return RET_UNHANDLED;
    default:
        return SUPER(blinky_blinking);
    }
}

/* ------------------------------------------------------------------ Button */

static int button_released(ao_t *me, const evt_t *e)
{
    button_t *b = (button_t *)me;
    switch (e->sig) {
    case PRESS_SIG: {
        rate_evt_t *r = (rate_evt_t *)evt_new(sizeof(rate_evt_t), RATE_SIG);
        if (r != 0) {
            r->period = periods[b->presses % (sizeof periods / sizeof periods[0])];
            (void)ao_post(&l_blinky.super, &r->super, me);
        }
        b->presses++;
        return TRAN(button_pressed);
    }
    default:
        return SUPER(ao_top);
    }
}

static int button_pressed(ao_t *me, const evt_t *e)
{
    switch (e->sig) {
    case RELEASE_SIG:
        return TRAN(button_released);
    default:
        return SUPER(ao_top);
    }
}

/* ------------------------------------------------------------------ Monitor */

static int monitor_collecting(ao_t *me, const evt_t *e)
{
    monitor_t *m = (monitor_t *)me;
    switch (e->sig) {
    case SIG_ENTRY:
        m->count = 0u;
        m->sum = 0;
        return RET_HANDLED;
    case SAMPLE_SIG: {
        const sample_evt_t *s = (const sample_evt_t *)e;
        if (m->count == 0u || s->value < m->min) {
            m->min = s->value;
        }
        if (m->count == 0u || s->value > m->max) {
            m->max = s->value;
        }
        if (m->count == 0u) {
            m->first_k = s->k;
        }
        m->count++;
        m->sum += s->value;
#ifdef QSDEMO_DELAY
        { /* a deliberately slow step, for the performance-gate tests */
            volatile uint32_t spin;
            for (spin = 0u; spin < (uint32_t)(QSDEMO_DELAY); spin++) {
            }
        }
#endif
        if (m->count < WINDOW) {
            return RET_HANDLED;
        }
        {
            mcuqs_args_t a;
            mcuqs_args_init(&a);
            mcuqs_arg_u32(&a, 0u, m->first_k);
            mcuqs_arg_u16(&a, 0u, m->count);
            mcuqs_arg_i32(&a, 0u, m->sum);
            mcuqs_arg_i16(&a, 0u, m->min);
            mcuqs_arg_i16(&a, 0u, m->max);
            mcuqs_user(MON_STAT, &a);
        }
        return TRAN(monitor_collecting); /* exit and re-enter: a new window */
    }
    default:
        return SUPER(ao_top);
    }
}

/* ------------------------------------------------------------------ wiring */

ao_t *const app_aos[APP_N_AOS] = {&l_blinky.super, &l_button.super, &l_monitor.super};

void app_dictionaries(void)
{
    MCUQS_OBJ_DICT(&l_blinky);
    MCUQS_OBJ_DICT(&l_blinky.te);
    MCUQS_OBJ_DICT(&l_button);
    MCUQS_OBJ_DICT(&l_monitor);
    mcuqs_obj_dict(l_pool, "EvtPool1");
    mcuqs_obj_dict(l_tick, "l_clock_tick");
    mcuqs_obj_dict(&l_adc_dma, "l_adc_dma");
    MCUQS_FUN_DICT(ao_top);
    MCUQS_FUN_DICT(blinky_blinking);
    MCUQS_FUN_DICT(blinky_off);
    MCUQS_FUN_DICT(blinky_on);
    MCUQS_FUN_DICT(button_released);
    MCUQS_FUN_DICT(button_pressed);
    MCUQS_FUN_DICT(monitor_collecting);
    MCUQS_SIG_DICT(TIMEOUT_SIG, 0);
    MCUQS_SIG_DICT(RATE_SIG, 0);
    MCUQS_SIG_DICT(PRESS_SIG, 0);
    MCUQS_SIG_DICT(RELEASE_SIG, 0);
    MCUQS_SIG_DICT(SAMPLE_SIG, 0);
    MCUQS_USR_DICT(MON_STAT);
    MCUQS_USR_DICT(APP_CMD);
    mcuqs_obj_dict(&l_qs_rx, "QS_RX");
}

void app_start(void)
{
    ao_ctor(&l_blinky.super, blinky_blinking, 1u, 4u);
    l_blinky.period = periods[0];
    te_ctor(&l_blinky.te, &l_blinky.super, TIMEOUT_SIG);
    ao_ctor(&l_button.super, button_released, 2u, 4u);
    ao_ctor(&l_monitor.super, monitor_collecting, 3u, 8u);
    ao_start(&l_blinky.super);
    ao_start(&l_button.super);
    ao_start(&l_monitor.super);
}

const uint8_t l_adc_dma = 0u;

/* An event from the host: parameters fill the event after its header (a RATE_SIG's
 * period, a SAMPLE_SIG's value and number), from the pool. */
uint8_t app_event(uint8_t target, uint16_t sig, const uint8_t *params, uint16_t len, void *sm,
                  void *ao)
{
    evt_t *e;
    uint16_t i;
    if (sig < SIG_USER || len > EVT_BLOCK - sizeof(evt_t) || target == MCUQS_EVT_INIT) {
        return 1u;
    }
    e = evt_new((uint16_t)(sizeof(evt_t) + len), sig);
    if (e == 0) {
        return 1u;
    }
    for (i = 0u; i < len; i++) {
        ((uint8_t *)e)[sizeof(evt_t) + i] = params[i];
    }
    if (target == 0u) {
        ao_publish(e, &l_qs_rx);
        return 0u;
    }
    if (target == MCUQS_EVT_DISPATCH && sm != 0) {
        ao_dispatch((ao_t *)sm, e);
        return 0u;
    }
    ao = target == MCUQS_EVT_POST_CURR ? ao : (void *)ao_by_prio(target);
    if (ao == 0 || target == MCUQS_EVT_DISPATCH) {
        evt_gc(e);
        return 1u;
    }
    return ao_post((ao_t *)ao, e, &l_qs_rx) ? 0u : 1u;
}

void app_command(uint8_t id, uint32_t p1, uint32_t p2, uint32_t p3)
{
    mcuqs_args_t a;
    mcuqs_args_init(&a);
    mcuqs_arg_u8(&a, 0u, id);
    mcuqs_arg_u32(&a, 0u, p1);
    mcuqs_arg_u32(&a, 0u, p2);
    mcuqs_arg_u32(&a, 0u, p3);
    mcuqs_user(APP_CMD, &a);
}

void app_tick_isr(uint32_t tick)
{
    uint32_t phase = tick % 70u;
    ao_tick(l_tick);
    if (tick % ADC_BURST == 0u) { /* the "DMA" delivers a block of samples */
        uint32_t i;
        for (i = 0u; i < ADC_BURST; i++) {
            uint32_t k = tick - ADC_BURST + i;
            sample_evt_t *s = (sample_evt_t *)evt_new(sizeof(sample_evt_t), SAMPLE_SIG);
            if (s != 0) {
                s->k = k;
                s->value = sample_value(k);
                (void)ao_post(&l_monitor.super, &s->super, &l_adc_dma);
            }
        }
    }
    if (phase == 10u || phase == 11u) { /* a press, and its bounce */
        (void)ao_post(&l_button.super, &press_evt, l_tick);
    } else if (phase == 35u) {
        (void)ao_post(&l_button.super, &release_evt, l_tick);
    }
}
