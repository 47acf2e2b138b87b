/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
#include "demo.h"

static const int16_t taps[WINDOW] = {3, 9, 20, 32, 32, 20, 9, 3};
static int16_t window[WINDOW];
static uint32_t pos;

NOINLINE int32_t fir_filter(int16_t x)
{
    int32_t acc = 0;
    uint32_t i;
    window[pos] = x;
    pos = (pos + 1u) % WINDOW;
    for (i = 0; i < WINDOW; i++) {
        acc += taps[i] * window[(pos + i) % WINDOW];
    }
    return acc / 128;
}

/* Divide and conquer on purpose: the profile should show recursion. */
NOINLINE int32_t window_energy(const int16_t *v, int n)
{
    if (n <= 2) {
        int32_t e = v[0] * v[0];
        return n == 2 ? e + v[1] * v[1] : e;
    }
    return window_energy(v, n / 2) + window_energy(v + n / 2, n - n / 2);
}

const int16_t *filter_window(void)
{
    return window;
}
