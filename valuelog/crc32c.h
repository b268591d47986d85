/* crc32c.h — CRC32C (Castagnoli), the checksum of every header, record and footer
 * (docs/FORMAT.md §1). ISA-L's crc32_iscsi (SSE4.2/PCLMUL picked at run time) for 256
 * bytes and more; below that the SSE4.2 crc32 instruction inline, where the CPU has it. */
#ifndef VALUELOG_CRC32C_H
#define VALUELOG_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Running form: start with CRC32C_INIT, extend over pieces, finish once. */
#define CRC32C_INIT 0xFFFFFFFFu
uint32_t crc32c_extend(uint32_t state, const void *buf, size_t len);
static inline uint32_t crc32c_finish(uint32_t state) { return state ^ 0xFFFFFFFFu; }
/* Extends state over a, then b, each as 8 little-endian bytes (a record's place,
 * FORMAT.md §3.2): the SSE4.2 instruction where the CPU has it. */
uint32_t crc32c_extend_u64x2(uint32_t state, uint64_t a, uint64_t b);

/* Extends three independent states at once, st[i] over p[i][0 .. len[i]) and then,
 * when suffix is not NULL, over suffix[i][0] and suffix[i][1] as crc32c_extend_u64x2
 * does: for short buffers (a run of small records, the iterator's) the three crc32
 * instruction chains overlap, so three cost about what one does. */
void crc32c_extend_x3(uint32_t st[3], const uint8_t *const p[3], const size_t len[3], const uint64_t (*suffix)[2]);

/* One-shot: CRC32C("123456789") = 0xE3069283. */
uint32_t crc32c(const void *buf, size_t len);

#endif
