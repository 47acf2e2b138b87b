/* Same-name static function as util_b.c, on a different line. */
static __attribute__((noipa)) int helper(int x)
{
    return x + 1;
}

int util_a(int x)
{
    return helper(x) * 2;
}
