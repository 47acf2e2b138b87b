/*
 * Copyright (c) 2026 the mcuprof authors. MIT licence: see include/mcuprof.h.
 */
/* QS demo on QEMU mps2-an386: three active objects traced over UART0 with mcuqs.
 * TIMER1 ticks at TICK_HZ; the idle loop sends the trace and sleeps (WFI) when there
 * is nothing to do, so QEMU's virtual clock follows the host's. The UART receive
 * interrupt only wakes the core: QS-RX bytes are read in the idle loop. */
#include "app.h"
#include "mcuprof_port.h"
#include "mcuqs.h"
#include "mps2.h"

#define TICK_HZ 100u
#define TX_CHUNK 128u /* bytes sent per idle pass, so events are never kept waiting long */

static volatile uint32_t ticks;

static void on_reset(void)
{
    SCB_AIRCR = AIRCR_SYSRESETREQ; /* QEMU reloads the image and reboots */
    for (;;) {
    }
}

static void on_tick(uint8_t rate)
{
    uint32_t key = mcuprof_port_critical_enter(); /* the tick interrupt counts too */
    (void)rate;                                  /* one tick rate */
    app_tick_isr(++ticks);
    mcuprof_port_critical_exit(key);
}

static const mcuqs_config_t qs_config = {
    .build = {0u, 0u, 12u, 23u, 11u, 26u}, /* 261123_120000: fixed, so builds repeat */
    .max_active = APP_N_AOS,
    .max_epool = 1u,
    .max_tick_rate = 1u,
    .on_reset = on_reset,
    .on_tick = on_tick,
    .on_command = app_command,
    .on_event = app_event,
    .on_query = ao_query,
};

void TIMER1_IRQHandler(void)
{
    TIMER_INTCLEAR(TIMER1_BASE) = 1u;
    app_tick_isr(++ticks);
}

void UART0RX_IRQHandler(void)
{
    UART0_INTCLEAR = UART_INT_RX;
}

static void idle(void)
{
    uint32_t key;
    if (mcuqs_poll(TX_CHUNK) != 0u) {
        return;
    }
    key = mcuprof_port_critical_enter();
    if (!ao_ready() && mcuqs_pending() == 0u && !(UART0_STATE & UART_STATE_RXFULL)) {
        __asm__ volatile("wfi");
    }
    mcuprof_port_critical_exit(key);
}

int main(void)
{
    profile_timer_init();
    ao_init();
    mcuqs_init(&qs_config);
    app_dictionaries();
    app_start();
    mcuqs_qf_run();
    UART0_CTRL |= UART_CTRL_RXINTEN;
    NVIC_ISER0 = (1u << UART0_RX_IRQN) | (1u << TIMER1_IRQN);
    TIMER_CTRL(TIMER1_BASE) = 0u;
    TIMER_RELOAD(TIMER1_BASE) = SYSCLK_HZ / TICK_HZ - 1u;
    TIMER_VALUE(TIMER1_BASE) = SYSCLK_HZ / TICK_HZ - 1u;
    TIMER_INTCLEAR(TIMER1_BASE) = 1u;
    TIMER_CTRL(TIMER1_BASE) = TIMER_CTRL_EN | TIMER_CTRL_IRQEN;
    ao_run(app_aos, APP_N_AOS, idle);
    return 0;
}
