// The tally's ICU data: the items of ICU's data package that it uses, in a package of the same
// format (README.md beside this file). It defines the symbol ICU looks its data up by, so the
// static link takes this instead of lib_FoundationICU.a's member icu_packaged_data.cpp.o, which
// holds the whole package (34 MB) under that symbol and nothing else. With a toolchain whose ICU
// is not version 76, nothing refers to this symbol and the linker drops it. The package is
// little-endian (the "l" of icudt76l); a big-endian machine keeps ICU's own. (`%`, not `@`: `@`
// starts a comment in 32-bit ARM assembly.)
#if defined(__linux__) && defined(__ELF__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    .section .rodata.icudt76_dat, "a", %progbits
    .globl icudt76_dat
    .type icudt76_dat, %object
    .balign 16
icudt76_dat:
    .incbin "icudt76l.dat"
    .size icudt76_dat, . - icudt76_dat
    .section .note.GNU-stack, "", %progbits
#endif
