/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see the full text in
 * include/mcuprof.h.
 */
/* The instrumentation hooks and the record ring buffer.
 *
 * The call-depth stack is kept whether or not profiling is active, so a START
 * in the middle of a call tree sees correct depths and entry times.
 *
 * Interrupt safety: an interrupt handler's own enter/exit pairs are balanced,
 * so it leaves g_depth as it found it. The entry hook reads the time first and
 * claims its stack slot before writing it; an interrupt at any point in between
 * uses a different slot or none. The exit hook reads the time and pushes the
 * record inside one critical section, so an interrupt either finishes inside
 * the caller's [entry, exit] interval or starts after it at a shallower depth. */
#include "mcuprof.h"
#include "mcuprof_internal.h"
#include "mcuprof_port.h"

#define RING_MASK (MCUPROF_RING_SIZE - 1u)

mcuprof_ring_t mcuprof_ring;
volatile uint8_t mcuprof_active;

static volatile uint32_t g_depth;
static volatile uint32_t g_entry[MCUPROF_MAX_DEPTH];
static volatile uint32_t g_depth_drops;

#if MCUPROF_ENABLE
MCUPROF_NOINSTR static void ring_push(uint32_t fn, uint32_t entry, uint32_t duration,
                                      uint32_t depth)
{
    mcuprof_ring_t *r = &mcuprof_ring;
    mcuprof_record_t *rec;
    if (r->head - r->tail == MCUPROF_RING_SIZE) {
        /* Last is best: the newest records describe what the host wants to see. */
        r->tail++;
        r->overflows++;
    }
    rec = &r->slot[r->head & RING_MASK];
    rec->func_addr = fn;
    rec->entry_time = entry;
    rec->duration = duration;
    rec->depth = (uint16_t)depth;
    r->head++;
    r->captured++;
}
#endif

void __cyg_profile_func_enter(void *this_fn, void *call_site)
{
#if MCUPROF_ENABLE
    uint32_t now = mcuprof_port_time();
    uint32_t d = g_depth;
    g_depth = d + 1u;
    if (d < MCUPROF_MAX_DEPTH) {
        g_entry[d] = now;
    }
#endif
    (void)this_fn;
    (void)call_site;
}

void __cyg_profile_func_exit(void *this_fn, void *call_site)
{
#if MCUPROF_ENABLE
    uint32_t state = mcuprof_port_critical_enter();
    uint32_t now = mcuprof_port_time();
    uint32_t d = g_depth;
    if (d != 0u) {
        d--;
        g_depth = d;
        if (d >= MCUPROF_MAX_DEPTH) {
            g_depth_drops++;
        } else if (mcuprof_active) {
            uint32_t entry = g_entry[d];
            ring_push((uint32_t)(uintptr_t)this_fn, entry, now - entry, d);
        }
    }
    mcuprof_port_critical_exit(state);
#endif
    (void)this_fn;
    (void)call_site;
}

int mcuprof_ring_pop(mcuprof_record_t *out)
{
    mcuprof_ring_t *r = &mcuprof_ring;
    int got = 0;
    uint32_t state = mcuprof_port_critical_enter();
    if (r->head != r->tail) {
        *out = r->slot[r->tail & RING_MASK];
        r->tail++;
        got = 1;
    }
    mcuprof_port_critical_exit(state);
    return got;
}

uint32_t mcuprof_ring_count(void)
{
    uint32_t state = mcuprof_port_critical_enter();
    uint32_t n = mcuprof_ring.head - mcuprof_ring.tail;
    mcuprof_port_critical_exit(state);
    return n;
}

void mcuprof_ring_clear(void)
{
    uint32_t state = mcuprof_port_critical_enter();
    mcuprof_ring.tail = mcuprof_ring.head;
    mcuprof_ring.overflows = 0u;
    mcuprof_ring.captured = 0u;
    g_depth_drops = 0u;
    mcuprof_port_critical_exit(state);
}

uint32_t mcuprof_depth_drops(void)
{
    return g_depth_drops;
}
