/* crc32c.c — CRC32C through ISA-L (docs/FORMAT.md §1). */
#include "valuelog/crc32c.h"

#include <isa-l/crc.h>

uint32_t crc32c_extend(uint32_t state, const void *buf, size_t len)
{
    /* crc32_iscsi takes an int length; feed large buffers in pieces. */
    const unsigned char *p = buf;
    while (len > 0) {
        size_t n = len > (1u << 30) ? (1u << 30) : len;
        state = crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, state);
        p += n;
        len -= n;
    }
    return state;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_HW_U64 1
__attribute__((target("sse4.2"))) static uint32_t u64x2_hw(uint32_t state, uint64_t a, uint64_t b)
{
    state = (uint32_t)__builtin_ia32_crc32di(state, a);
    return (uint32_t)__builtin_ia32_crc32di(state, b);
}
#endif

uint32_t crc32c_extend_u64x2(uint32_t state, uint64_t a, uint64_t b)
{
#ifdef CRC32C_HW_U64
    /* Two crc32q instructions: a library call costs more than 16 bytes of CRC. */
    if (__builtin_cpu_supports("sse4.2")) return u64x2_hw(state, a, b);
#endif
    unsigned char buf[16];
    for (int i = 0; i < 8; i++) {
        buf[i] = (unsigned char)(a >> (8 * i));
        buf[8 + i] = (unsigned char)(b >> (8 * i));
    }
    return crc32c_extend(state, buf, sizeof buf);
}

uint32_t crc32c(const void *buf, size_t len)
{
    return crc32c_finish(crc32c_extend(CRC32C_INIT, buf, len));
}
