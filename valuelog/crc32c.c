/* crc32c.c — CRC32C (docs/FORMAT.md §1): ISA-L for buffers of 256 bytes and more, the
 * SSE4.2 instruction below that. */
#include "valuelog/crc32c.h"

#include <string.h>

#include <isa-l/crc.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_HW_U64 1
/* Below this, one crc32q per 8 bytes beats ISA-L's folding kernel, whose fixed cost
 * is about 20 ns a call here (a 24 B buffer: 27 ns against 6 ns; 164 B: 35 against
 * 22; 324 B: 38 against 49; docs/BENCHMARKS.md "Checking while copying"). The
 * iterator's small records (docs/DESIGN.md "Iterator and tombstones") and record
 * headers are such calls. */
#define CRC32C_SMALL_BYTES 256u

/* Fewer than 8 bytes: one crc32 instruction per 4, 2 and 1 of them. */
__attribute__((target("sse4.2"))) static inline uint32_t tail_hw(uint32_t s, const unsigned char *p, size_t len)
{
    if (len & 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        s = __builtin_ia32_crc32si(s, w);
        p += 4;
    }
    if (len & 2) {
        uint16_t w;
        memcpy(&w, p, 2);
        s = __builtin_ia32_crc32hi(s, w);
        p += 2;
    }
    if (len & 1) s = __builtin_ia32_crc32qi(s, *p);
    return s;
}

__attribute__((target("sse4.2"))) static uint32_t small_hw(uint32_t state, const unsigned char *p, size_t len)
{
    uint64_t s = state;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        s = __builtin_ia32_crc32di(s, w);
    }
    return tail_hw((uint32_t)s, p, len);
}

__attribute__((target("sse4.2"))) static uint32_t u64x2_hw(uint32_t state, uint64_t a, uint64_t b)
{
    state = (uint32_t)__builtin_ia32_crc32di(state, a);
    return (uint32_t)__builtin_ia32_crc32di(state, b);
}

/* Three chains in lockstep over their common length m (a multiple of 8), then each
 * lane's rest (fewer than 8 bytes when the lengths are equal, the common case) and
 * suffix: crc32q has a latency of three cycles and a throughput of one, so three
 * independent buffers cost about what one does. */
__attribute__((target("sse4.2"))) static void x3_hw(uint32_t st[3], const uint8_t *const p[3], const size_t len[3],
                                                     size_t m, const uint64_t (*suffix)[2])
{
    uint64_t a = st[0], b = st[1], c = st[2];
    for (size_t i = 0; i < m; i += 8) {
        uint64_t wa, wb, wc;
        memcpy(&wa, p[0] + i, 8);
        memcpy(&wb, p[1] + i, 8);
        memcpy(&wc, p[2] + i, 8);
        a = __builtin_ia32_crc32di(a, wa);
        b = __builtin_ia32_crc32di(b, wb);
        c = __builtin_ia32_crc32di(c, wc);
    }
    uint64_t v[3] = { a, b, c };
    for (int k = 0; k < 3; k++) {
        size_t r = len[k] - m;
        v[k] = r < 8 ? tail_hw((uint32_t)v[k], p[k] + m, r) : small_hw((uint32_t)v[k], p[k] + m, r);
    }
    if (suffix)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) v[k] = __builtin_ia32_crc32di(v[k], suffix[k][j]);
    for (int k = 0; k < 3; k++) st[k] = (uint32_t)v[k];
}

static int have_sse42(void)
{
    static int have = -1; /* a benign race: every thread computes the same answer */
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (h < 0) __atomic_store_n(&have, h = __builtin_cpu_supports("sse4.2") ? 1 : 0, __ATOMIC_RELAXED);
    return h;
}

static int have_avx(void)
{
    static int have = -1; /* a benign race, as above */
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (h < 0) __atomic_store_n(&have, h = __builtin_cpu_supports("avx") ? 1 : 0, __ATOMIC_RELAXED);
    return h;
}

/* ISA-L's AVX-512 kernel (crc32_iscsi_by16_10) returns with the upper halves of the
 * vector registers dirty: it has no vzeroupper. Until something clears them, every
 * SSE instruction the process runs (our struct copies, libc's SSE paths) pays for the
 * mixed state; a mapped get of 1 KiB cost about 140 ns more (docs/BENCHMARKS.md "The
 * CRC's missing vzeroupper"). One instruction ends it. */
__attribute__((target("avx"))) static void upper_clear(void) { __builtin_ia32_vzeroupper(); }
#endif

uint32_t crc32c_extend(uint32_t state, const void *buf, size_t len)
{
#ifdef CRC32C_HW_U64
    if (len < CRC32C_SMALL_BYTES && have_sse42()) return small_hw(state, buf, len);
#endif
    /* crc32_iscsi takes an int length; feed large buffers in pieces. */
    const unsigned char *p = buf;
    while (len > 0) {
        size_t n = len > (1u << 30) ? (1u << 30) : len;
        state = crc32_iscsi((unsigned char *)(uintptr_t)p, (int)n, state);
        p += n;
        len -= n;
    }
#ifdef CRC32C_HW_U64
    if (have_avx()) upper_clear();
#endif
    return state;
}

uint32_t crc32c_extend_u64x2(uint32_t state, uint64_t a, uint64_t b)
{
#ifdef CRC32C_HW_U64
    /* Two crc32q instructions: a library call costs more than 16 bytes of CRC. */
    if (have_sse42()) return u64x2_hw(state, a, b);
#endif
    unsigned char buf[16];
    for (int i = 0; i < 8; i++) {
        buf[i] = (unsigned char)(a >> (8 * i));
        buf[8 + i] = (unsigned char)(b >> (8 * i));
    }
    return crc32c_extend(state, buf, sizeof buf);
}

void crc32c_extend_x3(uint32_t st[3], const uint8_t *const p[3], const size_t len[3], const uint64_t (*suffix)[2])
{
    size_t m = len[0] < len[1] ? len[0] : len[1];
    m = (m < len[2] ? m : len[2]) & ~(size_t)7;
#ifdef CRC32C_HW_U64
    /* From CRC32C_SMALL_BYTES on, ISA-L's folding kernel beats the instruction. */
    if (len[0] < CRC32C_SMALL_BYTES && len[1] < CRC32C_SMALL_BYTES && len[2] < CRC32C_SMALL_BYTES && have_sse42()) {
        x3_hw(st, p, len, m, suffix);
        return;
    }
#endif
    for (int i = 0; i < 3; i++) {
        st[i] = crc32c_extend(st[i], p[i], len[i]);
        if (suffix) st[i] = crc32c_extend_u64x2(st[i], suffix[i][0], suffix[i][1]);
    }
}

uint32_t crc32c(const void *buf, size_t len)
{
    return crc32c_finish(crc32c_extend(CRC32C_INIT, buf, len));
}
