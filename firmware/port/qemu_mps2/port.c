/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* mcuprof port layer for QEMU mps2-an386. QEMU does not model the DWT cycle
 * counter, so TIMER0 runs free at SYSCLK and its down-count is inverted. */
#include "mcuprof_port.h"
#include "mps2.h"

void uart_init(void)
{
    /* QEMU's CMSDK UART latches a byte written while TX is disabled and never
     * sends it, stalling every later write: enable it before anything prints. */
    UART0_BAUDDIV = SYSCLK_HZ / 115200u;
    UART0_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN;
}

void profile_timer_init(void)
{
    TIMER_CTRL(TIMER0_BASE) = 0u;
    TIMER_RELOAD(TIMER0_BASE) = 0xFFFFFFFFu;
    TIMER_VALUE(TIMER0_BASE) = 0xFFFFFFFFu;
    TIMER_CTRL(TIMER0_BASE) = TIMER_CTRL_EN;
}

uint32_t mcuprof_port_time(void)
{
    return ~TIMER_VALUE(TIMER0_BASE);
}

int mcuprof_port_putc(uint8_t byte)
{
    if (UART0_STATE & UART_STATE_TXFULL) {
        return 0;
    }
    UART0_DATA = byte;
    return 1;
}

int mcuprof_port_getc(void)
{
    if (UART0_STATE & UART_STATE_RXFULL) {
        return (int)(UART0_DATA & 0xFFu);
    }
    return -1;
}

uint32_t mcuprof_port_critical_enter(void)
{
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask)::"memory");
    return primask;
}

void mcuprof_port_critical_exit(uint32_t state)
{
    __asm__ volatile("msr primask, %0" ::"r"(state) : "memory");
}
