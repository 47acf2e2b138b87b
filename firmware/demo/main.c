/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
#include "demo.h"
#include "mcuprof.h"
#include "mps2.h"

#define CONTROL_RATE_HZ 1000u
#define SETPOINT 400

extern const uint8_t __text_start[];
extern const uint8_t __text_end[];

static volatile int32_t actuator;

NOINLINE void actuator_write(int32_t u)
{
    actuator = u;
}

static NOINLINE void control_iteration(int16_t sample)
{
    int32_t y = fir_filter(sample);
    int32_t energy = window_energy(filter_window(), WINDOW);
    int32_t u = control_step(SETPOINT, y);
    actuator_write(energy > 0 ? u : 0);
}

/* Not instrumented: main never returns, so it would never produce a record and
 * every stack below it would start with an orphan frame. Its callees are roots. */
MCUPROF_NOINSTR int main(void)
{
    static const mcuprof_config_t config = {
        .mcu_clock_hz = SYSCLK_HZ,
        .timer_freq = SYSCLK_HZ,
        .fw_version = "demo-1.0",
        .text_start = __text_start,
        .text_end = __text_end,
    };
    int16_t sample;
    profile_timer_init();
    mcuprof_init(&config);
    sensor_init(CONTROL_RATE_HZ);
    for (;;) {
        if (sensor_ready && sensor_take(&sample)) {
            control_iteration(sample);
        }
        mcuprof_poll();
    }
}
