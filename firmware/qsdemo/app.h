/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* The QS demo application: Blinky, Button and Monitor (see app.c). */
#ifndef APP_H
#define APP_H

#include <stdint.h>

#include "ao.h"

#define APP_N_AOS 3u
#define MON_STAT (MCUQS_USER + 0u) /* application record: one Monitor window */
#define ADC_BURST 4u               /* samples per "DMA" block, one block every 4 ticks */

extern ao_t *const app_aos[APP_N_AOS];
extern const uint8_t l_adc_dma;

void app_dictionaries(void);
void app_start(void);
/* The clock tick's work, from the tick interrupt; `tick` counts from 1. */
void app_tick_isr(uint32_t tick);
/* The "ADC" value of sample k (the host tests recompute it). */
int16_t sample_value(uint32_t k);

#endif /* APP_H */
