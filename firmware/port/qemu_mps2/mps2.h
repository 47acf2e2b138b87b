/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* The few MPS2 AN386 (Cortex-M4) peripherals the demo touches, as QEMU models them. */
#ifndef MPS2_H
#define MPS2_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(addr))

#define SYSCLK_HZ 25000000u

/* CMSDK APB UART0 */
#define UART0_BASE 0x40004000u
#define UART0_DATA REG32(UART0_BASE + 0x00u)
#define UART0_STATE REG32(UART0_BASE + 0x04u)
#define UART0_CTRL REG32(UART0_BASE + 0x08u)
#define UART0_BAUDDIV REG32(UART0_BASE + 0x10u)
#define UART_STATE_TXFULL 0x1u
#define UART_STATE_RXFULL 0x2u
#define UART_CTRL_TXEN 0x1u
#define UART_CTRL_RXEN 0x2u

/* CMSDK APB timers, clocked at SYSCLK_HZ, counting down */
#define TIMER0_BASE 0x40000000u
#define TIMER1_BASE 0x40001000u
#define TIMER_CTRL(base) REG32((base) + 0x00u)
#define TIMER_VALUE(base) REG32((base) + 0x04u)
#define TIMER_RELOAD(base) REG32((base) + 0x08u)
#define TIMER_INTCLEAR(base) REG32((base) + 0x0Cu)
#define TIMER_CTRL_EN 0x1u
#define TIMER_CTRL_IRQEN 0x8u
#define TIMER1_IRQN 9u

#define NVIC_ISER0 REG32(0xE000E100u)

void uart_init(void) __attribute__((no_instrument_function));
void profile_timer_init(void) __attribute__((no_instrument_function));

/* Added for the QS demo (kept at the end so the MiniProfiler demo's debug lines stay put). */
#define UART_CTRL_RXINTEN 0x8u
#define UART0_INTCLEAR REG32(UART0_BASE + 0x0Cu)
#define UART_INT_RX 0x2u
#define UART0_RX_IRQN 0u
#define SCB_AIRCR REG32(0xE000ED0Cu)
#define AIRCR_SYSRESETREQ 0x05FA0004u
/* Built with -DPORT_UART0_RX_IRQ (the QS demo), the vector table has this handler. */
void UART0RX_IRQHandler(void);

#endif /* MPS2_H */
