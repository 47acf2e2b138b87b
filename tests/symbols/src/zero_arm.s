@ Function symbols without a size, and a weak alias, as hand-written startup code has them.
    .syntax unified
    .thumb
    .text
    .global zero_size_fn
    .type zero_size_fn, %function
    .thumb_func
zero_size_fn:
    nop
    nop
    nop
    bx lr

    .global after_zero
    .type after_zero, %function
    .thumb_func
after_zero:
    bx lr
    .size after_zero, .-after_zero

    .weak weak_alias
    .thumb_set weak_alias, after_zero
    .type weak_alias, %function
