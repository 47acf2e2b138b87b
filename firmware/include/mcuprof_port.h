/*
 * mcuprof port layer: the five functions a target must provide.
 * Same MIT licence as mcuprof.h.
 *
 * All five are called with interrupts in any state, and the first and the last
 * two are called from inside the instrumentation hooks, so they must be
 * compiled without instrumentation (mark them MCUPROF_NOINSTR) and be short.
 */
#ifndef MCUPROF_PORT_H
#define MCUPROF_PORT_H

#include <stdint.h>

#include "mcuprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A free-running up-counter at config.timer_freq, wrapping at 2^32.
 * Cortex-M3/M4/M7: DWT->CYCCNT. QEMU (no DWT): a CMSDK timer. */
uint32_t mcuprof_port_time(void) MCUPROF_NOINSTR;

/* Hand one byte to the transmitter if it can take it now: return 1 if it was
 * accepted, 0 if the transmitter is busy. Must not block. */
int mcuprof_port_putc(uint8_t byte) MCUPROF_NOINSTR;

/* Return the next received byte (0..255), or -1 when none is waiting. Must not block. */
int mcuprof_port_getc(void) MCUPROF_NOINSTR;

/* Enter a critical section that interrupts cannot break into, returning the
 * previous state; exit restores that state, so sections may nest.
 * Cortex-M: read PRIMASK then CPSID I; restore PRIMASK. */
uint32_t mcuprof_port_critical_enter(void) MCUPROF_NOINSTR;
void mcuprof_port_critical_exit(uint32_t state) MCUPROF_NOINSTR;

#ifdef __cplusplus
}
#endif

#endif /* MCUPROF_PORT_H */
