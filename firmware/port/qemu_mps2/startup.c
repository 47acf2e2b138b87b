/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* Vector table and reset handler. Nothing here is instrumented: the hooks need
 * .bss zeroed and the UART enabled before the first instrumented call. */
#include <stdint.h>

#include "mps2.h"

#define NOINSTR __attribute__((no_instrument_function))

extern uint32_t __stack_top[];
extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

int main(void);
void Reset_Handler(void) NOINSTR;
void Default_Handler(void) NOINSTR;
void TIMER1_IRQHandler(void);

void Reset_Handler(void)
{
    uint32_t *src = __data_load;
    uint32_t *dst;
    void (**ctor)(void);
    uart_init();
    for (dst = __data_start; dst < __data_end;) {
        *dst++ = *src++;
    }
    for (dst = __bss_start; dst < __bss_end;) {
        *dst++ = 0u;
    }
    for (ctor = __init_array_start; ctor < __init_array_end; ctor++) {
        (*ctor)();
    }
    main();
    for (;;) {
    }
}

void Default_Handler(void)
{
    for (;;) {
    }
}

#define VECTOR(fn) ((uint32_t)(uintptr_t)(fn))

__attribute__((section(".vectors"), used)) static const uint32_t vectors[16 + 16] = {
    [0] = VECTOR(__stack_top),
    [1] = VECTOR(Reset_Handler),
    [2] = VECTOR(Default_Handler),  /* NMI */
    [3] = VECTOR(Default_Handler),  /* HardFault */
    [4] = VECTOR(Default_Handler),  /* MemManage */
    [5] = VECTOR(Default_Handler),  /* BusFault */
    [6] = VECTOR(Default_Handler),  /* UsageFault */
    [11] = VECTOR(Default_Handler), /* SVCall */
    [14] = VECTOR(Default_Handler), /* PendSV */
    [15] = VECTOR(Default_Handler), /* SysTick */
    [16 + TIMER1_IRQN] = VECTOR(TIMER1_IRQHandler),
#ifdef PORT_UART0_RX_IRQ
    [16 + UART0_RX_IRQN] = VECTOR(UART0RX_IRQHandler),
#endif
};
