/* Same-name static function as util_a.c, on a different line. */

int util_b(int x);

static __attribute__((noipa)) int helper(int x)
{
    return x - 1;
}

int util_b(int x)
{
    return helper(x) * 5;
}
