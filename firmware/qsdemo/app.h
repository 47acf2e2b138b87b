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
#define APP_CMD (MCUQS_USER + 1u)  /* application record: a QS-RX command, echoed */
#define ADC_BURST 4u               /* samples per "DMA" block, one block every 4 ticks */

extern ao_t *const app_aos[APP_N_AOS];
extern const uint8_t l_adc_dma;

void app_dictionaries(void);
void app_start(void);
/* The clock tick's work, from the tick interrupt; `tick` counts from 1. */
void app_tick_isr(uint32_t tick);
/* QS-RX EVENT and COMMAND (mcuqs_config_t.on_event, on_command). */
uint8_t app_event(uint8_t target, uint16_t sig, const uint8_t *params, uint16_t len, void *sm,
                  void *ao);
void app_command(uint8_t id, uint32_t p1, uint32_t p2, uint32_t p3);
/* The "ADC" value of sample k (the host tests recompute it). */
int16_t sample_value(uint32_t k);

#endif /* APP_H */
