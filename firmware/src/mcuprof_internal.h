/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see the full text in
 * include/mcuprof.h.
 */
/* State shared between the hooks (mcuprof_hooks.c) and the protocol side
 * (mcuprof_link.c). Not part of the public API. */
#ifndef MCUPROF_INTERNAL_H
#define MCUPROF_INTERNAL_H

#include "mcuprof.h"

#if (MCUPROF_RING_SIZE & (MCUPROF_RING_SIZE - 1u)) != 0 || MCUPROF_RING_SIZE < 2u
#error "MCUPROF_RING_SIZE must be a power of two (>= 2)"
#endif
#if MCUPROF_MAX_RECORDS_PER_PACKET < 1u || MCUPROF_MAX_RECORDS_PER_PACKET > 4681u
#error "MCUPROF_MAX_RECORDS_PER_PACKET must be 1..4681 (16-bit payload length)"
#endif

typedef struct {
    uint32_t func_addr;
    uint32_t entry_time;
    uint32_t duration;
    uint16_t depth;
} mcuprof_record_t;

typedef struct {
    mcuprof_record_t slot[MCUPROF_RING_SIZE];
    /* Free-running counts: their difference is the fill level, and unsigned
     * wrap-around keeps that right forever because the size is a power of two. */
    uint32_t head;
    uint32_t tail;
    uint32_t overflows;
    uint32_t captured;
} mcuprof_ring_t;

extern mcuprof_ring_t mcuprof_ring;
extern volatile uint8_t mcuprof_active;

/* Takes the oldest record; returns 0 when the ring is empty. Interrupt-safe. */
int mcuprof_ring_pop(mcuprof_record_t *out) MCUPROF_NOINSTR;
uint32_t mcuprof_ring_count(void) MCUPROF_NOINSTR;
/* Forgets the stored records and the counters; the call-depth stack stays. */
void mcuprof_ring_clear(void) MCUPROF_NOINSTR;

#endif /* MCUPROF_INTERNAL_H */
