/* Test firmware for the symbols tests: every definition starts on its own line so the
   tests can find the line DWARF should report by searching this text. */
extern int util_a(int x);
extern int util_b(int x);
extern int cpp_entry(int x);
extern void zero_size_fn(void);
extern int global_alias(int x);

volatile int counter;

__attribute__((noipa)) int leaf(int x)
{
    return x * 3 + counter;
}

static __attribute__((noipa)) int local_impl(int x)
{
    return x ^ counter;
}

/* A global name and a local name for the same code: tables should show the global one. */
int global_alias(int x) __attribute__((alias("local_impl")));

int main(void)
{
    int s = 0;
    for (int i = 0; i < 10; i++) {
        s += leaf(i) + util_a(i) + util_b(i) + cpp_entry(i) + global_alias(i);
    }
    zero_size_fn();
    return s;
}

void Reset_Handler(void)
{
    counter = main();
    for (;;) {
    }
}
