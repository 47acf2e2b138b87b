/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
#include "demo.h"
#include "mps2.h"

#define FIFO_SIZE 16u

static volatile int16_t fifo[FIFO_SIZE];
static volatile uint32_t fifo_head;
static volatile uint32_t fifo_tail;
static uint32_t noise_state = 12345u;
static uint32_t phase;

/* Read by the idle loop without a call, so polling adds no records. */
volatile uint8_t sensor_ready;

void sensor_init(uint32_t rate_hz)
{
    TIMER_CTRL(TIMER1_BASE) = 0u;
    TIMER_RELOAD(TIMER1_BASE) = SYSCLK_HZ / rate_hz - 1u;
    TIMER_VALUE(TIMER1_BASE) = SYSCLK_HZ / rate_hz - 1u;
    TIMER_INTCLEAR(TIMER1_BASE) = 1u;
    NVIC_ISER0 = 1u << TIMER1_IRQN;
    TIMER_CTRL(TIMER1_BASE) = TIMER_CTRL_EN | TIMER_CTRL_IRQEN;
}

/* A triangle wave plus LCG noise stands in for a real converter. */
NOINLINE int16_t adc_read(int channel)
{
    int32_t tri;
    noise_state = noise_state * 1103515245u + 12345u;
    phase = (phase + 7u) & 0x3FFu;
    tri = phase < 512u ? (int32_t)phase : (int32_t)(1023u - phase);
    return (int16_t)(tri * (channel + 1) + (int32_t)((noise_state >> 24) & 0x1Fu));
}

NOINLINE void sensor_sample(void)
{
    int16_t a = adc_read(0);
    int16_t b = adc_read(1);
    if (fifo_head - fifo_tail < FIFO_SIZE) {
        fifo[fifo_head % FIFO_SIZE] = (int16_t)((a + b) / 2);
        fifo_head++;
        sensor_ready = 1u;
    }
}

void TIMER1_IRQHandler(void)
{
    TIMER_INTCLEAR(TIMER1_BASE) = 1u;
    sensor_sample();
}

NOINLINE int sensor_take(int16_t *sample)
{
    sensor_ready = 0u;
    if (fifo_head == fifo_tail) {
        return 0;
    }
    if (fifo_head - fifo_tail > 1u) {
        sensor_ready = 1u;
    }
    *sample = fifo[fifo_tail % FIFO_SIZE];
    fifo_tail++;
    return 1;
}
