/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* A small sensor -> filter -> controller loop, the kind of code mcuprof is for. */
#ifndef DEMO_H
#define DEMO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NOINLINE __attribute__((noinline))
#define WINDOW 8

/* sensor.c: the timer ISR samples two ADC channels into a small FIFO. */
extern volatile uint8_t sensor_ready;
void sensor_init(uint32_t rate_hz);
int sensor_take(int16_t *sample);
int16_t adc_read(int channel);
void sensor_sample(void);
void TIMER1_IRQHandler(void);

/* filter.c */
int32_t fir_filter(int16_t x);
int32_t window_energy(const int16_t *v, int n);
const int16_t *filter_window(void);

/* control.cpp: a PI controller in C++ behind a C entry point. */
int32_t control_step(int32_t setpoint, int32_t measured);

/* main.c */
void actuator_write(int32_t u);

#ifdef __cplusplus
}
#endif

#endif /* DEMO_H */
