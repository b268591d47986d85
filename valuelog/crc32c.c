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

uint32_t crc32c(const void *buf, size_t len)
{
    return crc32c_finish(crc32c_extend(CRC32C_INIT, buf, len));
}
