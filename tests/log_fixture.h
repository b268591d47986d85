/* log_fixture.h — helpers the parts of the log suite (check_log_basic.c,
 * check_log_open.c) share: a log's stats, the items of a batch with content derived from
 * ids, and the code of a get into a throwaway buffer. */
#ifndef TESTS_LOG_FIXTURE_H
#define TESTS_LOG_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "tests/testutil.h"
#include "valuelog/valuelog.h"

/* n batch items with ids first_id.. (tu_key keys, tu_val values of lens[i] bytes:
 * free vals[i]). */
void make_items(uint64_t first_id, size_t n, const size_t *lens, vlog_item *items, char (*keys)[TU_KEY_BYTES + 1],
                uint8_t **vals);

/* vlog_get's code for p, read into a throwaway 8 KiB buffer. */
int get_rc(vlog *log, vlog_ptr p);

#endif
