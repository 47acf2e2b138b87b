/* A fake mcuprof port for host-side tests, driven from Python through ctypes.
 *
 * Time only moves when the test moves it. The transmitter accepts a set number of
 * bytes per poll (or any number). An "interrupt" can be scheduled to fire at the
 * N-th port call, so the hooks can be interrupted at every point they call the
 * port; like real hardware, it waits while a critical section is open. */
#include <stdint.h>
#include <string.h>

#include "mcuprof.h"
#include "mcuprof_port.h"
#include "mcuqs.h"

#define OUT_CAP (1u << 20)
#define IN_CAP 65536u

static uint32_t now;
static uint8_t out[OUT_CAP];
static uint32_t out_len;
static int32_t tx_room = -1;
static uint8_t in[IN_CAP];
static uint32_t in_len, in_pos;
static int crit_depth, crit_max;
static uint32_t port_calls;
static uint32_t irq_at;       /* fire at this port call number, 0 = none */
static int irq_pending;
static uint32_t irq_fn, irq_ticks;
static mcuprof_config_t config;
static int isr_qs; /* the "interrupt" also makes a QS record */

static void run_isr(void)
{
    irq_pending = 0;
    irq_at = 0;
    now += 1;
    __cyg_profile_func_enter((void *)(uintptr_t)irq_fn, 0);
    now += irq_ticks;
    __cyg_profile_func_exit((void *)(uintptr_t)irq_fn, 0);
    if (isr_qs) {
        static const uint8_t data[3] = {0xAA, 0x7E, 0x7D};
        mcuqs_record(101, 1, data, 3);
    }
    now += 1;
}

static void count_call(void)
{
    port_calls++;
    if (irq_at != 0 && port_calls == irq_at) {
        irq_pending = 1;
    }
    if (irq_pending && crit_depth == 0) {
        run_isr();
    }
}

uint32_t mcuprof_port_time(void)
{
    uint32_t t;
    count_call();
    t = now;
    return t;
}

int mcuprof_port_putc(uint8_t byte)
{
    if (tx_room == 0 || out_len == OUT_CAP) {
        return 0;
    }
    if (tx_room > 0) {
        tx_room--;
    }
    out[out_len++] = byte;
    return 1;
}

int mcuprof_port_getc(void)
{
    if (in_pos == in_len) {
        return -1;
    }
    return in[in_pos++];
}

uint32_t mcuprof_port_critical_enter(void)
{
    uint32_t prev;
    count_call();
    prev = crit_depth > 0;
    crit_depth++;
    if (crit_depth > crit_max) {
        crit_max = crit_depth;
    }
    return prev;
}

void mcuprof_port_critical_exit(uint32_t state)
{
    crit_depth--;
    if ((state != 0) != (crit_depth > 0)) {
        crit_max = -1000; /* unbalanced: the test sees a negative maximum */
    }
    count_call();
}

/* ---- test controls ---- */

void fake_init(const uint8_t *text, uint32_t text_len, uint32_t timer_freq, uint16_t rpp,
               uint32_t flush_ticks)
{
    out_len = 0;
    in_len = in_pos = 0;
    tx_room = -1;
    crit_depth = crit_max = 0;
    irq_at = 0;
    irq_pending = 0;
    port_calls = 0;
    config.mcu_clock_hz = 48000000u;
    config.timer_freq = timer_freq;
    config.fw_version = "host-test-1.2.3-long-name";
    config.text_start = text;
    config.text_end = text + text_len;
    config.flush_ticks = flush_ticks;
    config.records_per_packet = rpp;
    mcuprof_init(&config);
}

void fake_set_time(uint32_t t) { now = t; }
uint32_t fake_time(void) { return now; }
void fake_advance(uint32_t dt) { now += dt; }
void fake_set_tx_room(int32_t n) { tx_room = n; }
int fake_crit_depth(void) { return crit_depth; }
int fake_crit_max(void) { return crit_max; }
uint32_t fake_port_calls(void) { return port_calls; }

void fake_feed(const uint8_t *data, uint32_t len)
{
    if (in_pos == in_len) {
        in_pos = in_len = 0;
    }
    if (len > IN_CAP - in_len) {
        len = IN_CAP - in_len;
    }
    memcpy(in + in_len, data, len);
    in_len += len;
}

uint32_t fake_pending_input(void) { return in_len - in_pos; }

uint32_t fake_take_output(uint8_t *dst, uint32_t cap)
{
    uint32_t n = out_len < cap ? out_len : cap;
    memcpy(dst, out, n);
    memmove(out, out + n, out_len - n);
    out_len -= n;
    return n;
}

void fake_schedule_irq(uint32_t at_call, uint32_t fn, uint32_t ticks)
{
    port_calls = 0;
    irq_at = at_call;
    irq_pending = 0;
    irq_fn = fn;
    irq_ticks = ticks;
}

void fake_set_isr_qs(int on) { isr_qs = on; }

int fake_irq_fired(void) { return irq_at == 0 && !irq_pending; }
