# A function symbol without a size, as hand-written assembly often has it.
    .text
    .globl zero_size_fn
    .type zero_size_fn, @function
zero_size_fn:
    nop
    nop
    nop
    ret

    .globl after_zero
    .type after_zero, @function
after_zero:
    ret
    .size after_zero, .-after_zero
    .section .note.GNU-stack,"",@progbits
